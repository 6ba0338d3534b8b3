# Copyright: gangsched.kubeflow contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# Private to this collection: the connection and authentication options every module that talks to the
# Kubernetes API accepts. The modules take them, with their K8S_AUTH_* environment fallbacks, from
# kubernetes.core's client at run time; they are documented here so that the documentation loads without
# kubernetes.core installed (as Galaxy reads it). May change without notice.

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  kubeconfig:
    description:
      - The kubeconfig to connect with, as the path of a kubeconfig file or as a kubeconfig given inline as a
        dictionary. The environment variable E(K8S_AUTH_KUBECONFIG) is read when it is not set.
      - When none of this option, O(context) and O(host) with credentials is set, the module uses the service
        account of the pod it runs in, and outside a pod the file that E(KUBECONFIG) names, else C(~/.kube/config).
    type: raw
  context:
    description:
      - The context of the kubeconfig to use; unset, the kubeconfig's current context. The environment variable
        E(K8S_AUTH_CONTEXT) is read when it is not set.
    type: str
  host:
    description:
      - The URL of the Kubernetes API server, for example V(https://10.0.0.1:6443). The environment variable
        E(K8S_AUTH_HOST) is read when it is not set.
      - With credentials next to it (O(api_key), O(username) and O(password), or O(client_cert) and
        O(client_key)) no kubeconfig is read; otherwise it replaces the server of the kubeconfig's context.
    type: str
  api_key:
    description:
      - A bearer token (for example a service account's token) sent to the API server with each request. The
        environment variable E(K8S_AUTH_API_KEY) is read when it is not set.
    type: str
  username:
    description:
      - The user name for HTTP basic authentication. The environment variable E(K8S_AUTH_USERNAME) is read when
        it is not set.
      - Only an API server set up to accept basic authentication takes it; clusters that log in through OAuth or
        OIDC need a token (O(api_key)) or a kubeconfig instead.
    type: str
  password:
    description:
      - The password that goes with O(username) for HTTP basic authentication. The environment variable
        E(K8S_AUTH_PASSWORD) is read when it is not set.
    type: str
  client_cert:
    description:
      - The path of a client certificate (PEM) that identifies the caller to the API server, used with
        O(client_key). The environment variable E(K8S_AUTH_CERT_FILE) is read when it is not set.
    type: path
    aliases: [cert_file]
  client_key:
    description:
      - The path of the private key (PEM) of O(client_cert). The environment variable E(K8S_AUTH_KEY_FILE) is
        read when it is not set.
    type: path
    aliases: [key_file]
  ca_cert:
    description:
      - The path of the CA certificate (PEM) that the API server's certificate is checked against. It must hold
        the whole chain up to the root, or the check fails. The environment variable E(K8S_AUTH_SSL_CA_CERT) is
        read when it is not set.
    type: path
    aliases: [ssl_ca_cert]
  validate_certs:
    description:
      - Whether the API server's TLS certificate is checked. Unset, the kubeconfig's setting applies, and
        certificates are checked when it has none.
      - The environment variable E(K8S_AUTH_VERIFY_SSL) is read when it is not set (V(0), V(false) or V(no)
        turn the check off, any other value on).
    type: bool
    aliases: [verify_ssl]
  proxy:
    description:
      - The URL of an HTTP proxy that the connection to the API server goes through. The environment variable
        E(K8S_AUTH_PROXY) is read when it is not set; the usual E(HTTP_PROXY) and E(HTTPS_PROXY) are not.
    type: str
  no_proxy:
    description:
      - Hosts, domains, IP addresses or CIDR ranges, separated by commas, that are reached without O(proxy), for
        example V(localhost,.cluster.local,10.0.0.0/8). The environment variable E(K8S_AUTH_NO_PROXY) is read
        when it is not set; E(NO_PROXY) is not.
    type: str
  proxy_headers:
    description:
      - Headers sent to the HTTP proxy of O(proxy).
    type: dict
    suboptions:
      proxy_basic_auth:
        description:
          - V(user:password) for the proxy's basic authentication (the C(Proxy-Authorization) header). The
            environment variable E(K8S_AUTH_PROXY_HEADERS_PROXY_BASIC_AUTH) is read when it is not set.
        type: str
      basic_auth:
        description:
          - V(user:password) for a basic C(Authorization) header. The environment variable
            E(K8S_AUTH_PROXY_HEADERS_BASIC_AUTH) is read when it is not set.
        type: str
      user_agent:
        description:
          - The C(User-Agent) header, for example V(deploy/1.0). The environment variable
            E(K8S_AUTH_PROXY_HEADERS_USER_AGENT) is read when it is not set.
        type: str
  persist_config:
    description:
      - Whether a token that the client refreshes while it connects (the kubeconfig user's OIDC refresh token or
        auth provider) is written back to the kubeconfig file. Without it the file keeps the old token, which
        may have expired by the next run. Unset, nothing is written.
      - The environment variable E(K8S_AUTH_PERSIST_CONFIG) is read when it is not set.
    type: bool
  impersonate_user:
    description:
      - The user to act as (the C(Impersonate-User) header); the authenticated user needs the right to
        impersonate it. The environment variable E(K8S_AUTH_IMPERSONATE_USER) is read when it is not set.
    type: str
  impersonate_groups:
    description:
      - The groups to act as (one C(Impersonate-Group) header for each), with O(impersonate_user). The environment
        variable E(K8S_AUTH_IMPERSONATE_GROUPS) is read when it is not set, as names separated by commas, for
        example V(team-a,team-b).
    type: list
    elements: str
notes:
  - The connection options are the same as those of the kubernetes.core modules, and so are their K8S_AUTH_*
    environment variables; an option given to the task wins over its variable. C(module_defaults) with
    C(group/gangsched.kubeflow.kubeflow) sets them once for every module of this collection that talks to the
    cluster.
  - O(kubeconfig) (an inline one holds credentials), O(api_key), O(password) and the basic authentication
    values of O(proxy_headers) are secrets, masked in the task's output and logs.
"""
