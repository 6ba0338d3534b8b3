/*
 * A stand-in libcuda.so for the GPU-node harness: the device plugin's CDI spec generation looks for the driver's
 * libcuda.so.<driver version> next to libnvidia-ml. It has no device: cuInit reports CUDA_ERROR_NO_DEVICE.
 * Written for the lab.
 */
int cuInit(unsigned int flags) {
    (void)flags;
    return 100; /* CUDA_ERROR_NO_DEVICE */
}

int cuDriverGetVersion(int *version) {
    if (!version)
        return 1; /* CUDA_ERROR_INVALID_VALUE */
    *version = 13000;
    return 0;
}
