"""The tests' warm interpreter (tests/ansible_zygote.py, through ``ansible_run.ansible_cli``): a run forked from a warm
child that imported Ansible reads the configuration of its own environment, and prints what a new process prints."""

from __future__ import annotations

import os
import subprocess

import ansible_run
import ansible_zygote as zygote
import pytest
from ansible_run import BIN, REPO, ansible_cli, ansible_env

pytestmark = pytest.mark.skipif(os.environ.get("GANGSCHED_TEST_WARM") == "0", reason="every run is cold")


def _colored(env: dict) -> bool:
    """Whether a run with ``env`` writes in colour: ansible.utils.color decides it once, when imported, from
    ANSIBLE_FORCE_COLOR (its output is a file, not a terminal)."""
    cmd = [BIN / "ansible", "localhost", "-m", "ansible.builtin.ping"]
    out = ansible_cli(cmd, {**env, "ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.oneline"})
    assert out.returncode == 0 and "pong" in out.stdout, out.stderr[-2000:]
    return "\x1b[" in out.stdout


def test_each_run_reads_the_configuration_of_its_own_environment():
    env = ansible_env(None)
    forced = {**env, "ANSIBLE_FORCE_COLOR": "1"}
    # a new Ansible environment each: a warm child each; the first one again: its child again
    assert [_colored(e) for e in (forced, env, forced, env)] == [True, False, True, False]


def test_the_key_leaves_out_only_what_ansible_does_not_read_when_imported(tmp_path):
    cfg = tmp_path / "ansible.cfg"
    cfg.write_text("[defaults]\n")
    base = {"env": {"ANSIBLE_CONFIG": str(cfg), "HOME": "/root", "PYTEST_CURRENT_TEST": "a"}, "cwd": str(REPO)}
    key = zygote._ansible_key(base)
    same = {**base, "env": {**base["env"], "PYTEST_CURRENT_TEST": "b", "GANGSCHED_LAB_DIR": "x", "K8S_AUTH_HOST": "y"}}
    assert zygote._ansible_key(same) == key
    assert zygote._ansible_key({**base, "env": {**base["env"], "ANSIBLE_TIMEOUT": "3"}}) != key
    assert zygote._ansible_key({**base, "env": {**base["env"], "TERM": "dumb"}}) != key
    assert zygote._ansible_key({**base, "cwd": str(tmp_path)}) != key
    cfg.write_text("[defaults]\ntimeout = 3\n")  # the config file changed on disk
    assert zygote._ansible_key(base) != key


def test_what_the_imports_print_comes_first_in_each_run_as_in_a_new_process():
    # a deprecated setting: ansible-core reports it when its configuration is read, at import
    env = {**ansible_env(None), "ANSIBLE_JINJA2_NATIVE": "1", "ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.oneline"}
    cmd = [str(BIN / "ansible"), "localhost", "-m", "ansible.builtin.ping"]
    cold = subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True, timeout=120)
    warm = [ansible_cli(cmd, env) for _ in range(2)]
    assert cold.returncode == 0 and [w.returncode for w in warm] == [0, 0]
    noise = [line for line in cold.stderr.splitlines() if "JINJA2_NATIVE" in line.upper()]
    for w in warm:
        assert [line for line in w.stderr.splitlines() if "JINJA2_NATIVE" in line.upper()] == noise


def test_a_run_dies_of_sigterm_as_a_new_process_does(tmp_path):
    # the serving processes stop on SIGTERM through a handler of their own; a run forked from them must not keep it
    script = tmp_path / "term.py"
    script.write_text("import os, signal, time\nos.kill(os.getpid(), signal.SIGTERM)\ntime.sleep(5)\nprint('alive')\n")
    env = ansible_env(None)
    with ansible_run._ZYGOTE_LOCK:
        out = ansible_run.warm_run(ansible_run._zygote(), [str(script)], env, REPO, 30)
    assert (out.returncode, out.stdout) == (-15, "")
