/*
 * The GPU-node harness's pod: reports, as one JSON line on stdout and in the file argv[1], the NVIDIA device
 * nodes it was given, NVIDIA_VISIBLE_DEVICES, and what NVML (the libnvidia-ml the runtime mounted into it, found
 * in /proc/self/mountinfo) answers: its init status and each GPU's name and UUID. Then it sleeps until stopped,
 * so that the kubelet keeps its allocation. Written for the lab.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int (*fn_void)(void);
typedef int (*fn_uintp)(unsigned int *);
typedef int (*fn_handle)(unsigned int, void **);
typedef int (*fn_str)(void *, char *, unsigned int);

static void json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (; s && *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        if ((unsigned char)*s < 0x20)
            fprintf(f, "\\u%04x", *s);
        else
            fputc(*s, f);
    }
    fputc('"', f);
}

static int find_library(char *out, size_t len) {
    FILE *m = fopen("/proc/self/mountinfo", "r");
    char line[4096];
    int found = 0;
    if (!m)
        return 0;
    while (!found && fgets(line, sizeof line, m)) {
        /* fields: id parent major:minor root mountpoint ... */
        char *save = NULL, *tok = strtok_r(line, " ", &save);
        for (int i = 0; tok && i < 4; i++)
            tok = strtok_r(NULL, " ", &save);
        if (tok && strstr(tok, "/libnvidia-ml.so.")) {
            snprintf(out, len, "%s", tok);
            found = 1;
        }
    }
    fclose(m);
    return found;
}

static void report(FILE *f) {
    fprintf(f, "{\"devices\": [");
    DIR *d = opendir("/dev");
    int first = 1;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, "nvidia", 6) != 0)
            continue;
        fputs(first ? "" : ", ", f);
        json_str(f, e->d_name);
        first = 0;
    }
    if (d)
        closedir(d);
    fprintf(f, "], \"visible_devices\": ");
    json_str(f, getenv("NVIDIA_VISIBLE_DEVICES") ? getenv("NVIDIA_VISIBLE_DEVICES") : "");
    char lib[1024] = "";
    if (!find_library(lib, sizeof lib)) {
        fprintf(f, ", \"nvml\": {\"library\": null}}\n");
        return;
    }
    fprintf(f, ", \"nvml\": {\"library\": ");
    json_str(f, lib);
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(f, ", \"error\": ");
        json_str(f, dlerror());
        fprintf(f, "}}\n");
        return;
    }
    fn_void init = (fn_void)dlsym(h, "nvmlInit_v2");
    fn_uintp count = (fn_uintp)dlsym(h, "nvmlDeviceGetCount_v2");
    fn_handle handle = (fn_handle)dlsym(h, "nvmlDeviceGetHandleByIndex_v2");
    fn_str name = (fn_str)dlsym(h, "nvmlDeviceGetName");
    fn_str uuid = (fn_str)dlsym(h, "nvmlDeviceGetUUID");
    if (!init || !count || !handle || !name || !uuid) {
        fprintf(f, ", \"error\": \"symbols missing\"}}\n");
        return;
    }
    int rc = init();
    fprintf(f, ", \"init\": %d, \"gpus\": [", rc);
    unsigned int n = 0;
    if (rc == 0 && count(&n) == 0) {
        for (unsigned int i = 0; i < n; i++) {
            void *dev = NULL;
            char nm[128] = "", id[128] = "";
            if (handle(i, &dev) != 0)
                continue;
            name(dev, nm, sizeof nm);
            uuid(dev, id, sizeof id);
            fprintf(f, "%s{\"name\": ", i ? ", " : "");
            json_str(f, nm);
            fprintf(f, ", \"uuid\": ");
            json_str(f, id);
            fputc('}', f);
        }
    }
    fprintf(f, "]}}\n");
}

static void stop(int sig) {
    (void)sig;
    _exit(0);
}

int main(int argc, char **argv) {
    signal(SIGTERM, stop);
    signal(SIGINT, stop);
    report(stdout);
    fflush(stdout);
    if (argc > 1) {
        char tmp[1024];
        snprintf(tmp, sizeof tmp, "%s.tmp", argv[1]);
        FILE *f = fopen(tmp, "w");
        if (f) {
            report(f);
            fclose(f);
            rename(tmp, argv[1]);
        }
    }
    for (;;)
        pause();
}
