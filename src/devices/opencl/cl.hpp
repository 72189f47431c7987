// The OpenCL C API as tandem uses it: through the ICD loader only (libOpenCL, any vendor's driver is
// found at run time), OpenCL 1.2 calls plus 2.0's SVM where a device offers it. RAII owners for the
// API's reference-counted objects, the error codes' names, and their mapping onto tandem::Status.
#pragma once

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 300
#endif
// clCreateCommandQueue: the one call a 1.x device needs where 2.0 added a replacement.
#ifndef CL_USE_DEPRECATED_OPENCL_1_2_APIS
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#endif
#include <CL/cl.h>

#include <memory>
#include <string>
#include <string_view>
#include <type_traits>

#include "abi/status.hpp"

namespace tandem::devices::opencl {

namespace detail {
template <class Handle, cl_int (*Release)(Handle)>
struct Releaser {
  void operator()(Handle h) const noexcept {
    if (h != nullptr) (void)Release(h);
  }
};
template <class Handle, cl_int (*Release)(Handle)>
using Owner = std::unique_ptr<std::remove_pointer_t<Handle>, Releaser<Handle, Release>>;
}  // namespace detail

using ContextPtr = detail::Owner<cl_context, clReleaseContext>;
using QueuePtr = detail::Owner<cl_command_queue, clReleaseCommandQueue>;
using ProgramPtr = detail::Owner<cl_program, clReleaseProgram>;
using KernelPtr = detail::Owner<cl_kernel, clReleaseKernel>;
using MemPtr = detail::Owner<cl_mem, clReleaseMemObject>;
using EventPtr = detail::Owner<cl_event, clReleaseEvent>;

// "CL_OUT_OF_RESOURCES" for -5; "CL error <n>" for a code this table does not know.
std::string cl_error_name(cl_int code);

// How a failed call ends a job: allocation failures are no_memory, everything else device_error.
Status status_from_cl(cl_int code);

// "<what>: CL_... (<code>)", the message of an error that names the call that failed.
std::string cl_message(std::string_view what, cl_int code);

}  // namespace tandem::devices::opencl
