/* no_device.h - how a CUDA test or benchmark ends when it finds no usable
   device (cudaGetDeviceCount fails or counts none): 0, a skip, by default,
   so CPU-only machines build and pass; 1 where GNMR_REQUIRE_GPU is set, as
   make gpu-check sets it on a machine with a GPU, so that a driver older
   than the CUDA runtime (cudaErrorInsufficientDriver) or any other refusal
   fails there instead of passing with nothing run. */
#ifndef GNMR_TESTS_NO_DEVICE_H
#define GNMR_TESTS_NO_DEVICE_H
#include <stdlib.h>
#define NO_DEVICE_EXIT (getenv("GNMR_REQUIRE_GPU") != NULL)
#endif
