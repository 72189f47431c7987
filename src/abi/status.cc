#include "abi/status.hpp"

namespace tandem {

std::string_view to_string(Status s) {
  switch (s) {
    case Status::ok: return "ok";
    case Status::pending: return "pending";
    case Status::invalid_packet: return "invalid_packet";
    case Status::unknown_function: return "unknown_function";
    case Status::not_accelerated: return "not_accelerated";
    case Status::queue_full: return "queue_full";
    case Status::translation_fault: return "translation_fault";
    case Status::device_error: return "device_error";
    case Status::cancelled: return "cancelled";
    case Status::disconnected: return "disconnected";
    case Status::job_too_large: return "job_too_large";
    case Status::dependency_failed: return "dependency_failed";
    case Status::invalid_argument: return "invalid_argument";
    case Status::no_memory: return "no_memory";
    case Status::limit_exceeded: return "limit_exceeded";
    case Status::timeout: return "timeout";
    case Status::protocol_error: return "protocol_error";
    case Status::permission_denied: return "permission_denied";
    case Status::io_error: return "io_error";
    case Status::buffer_unmapped: return "buffer_unmapped";
    case Status::device_memory_full: return "device_memory_full";
    case Status::access_unsupported: return "access_unsupported";
    case Status::service_failed: return "service_failed";
  }
  return "unknown_status";
}

}  // namespace tandem
