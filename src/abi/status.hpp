// Status codes and Result<T>: the one error policy of tandem's runtime code.
//
// Runtime code (everything a job passes through) returns a Status or a Result<T>; it never throws.
// Set-up code (configuration files, command-line tools) may throw tandem::Error; the C API and the
// tools catch it at their boundary and turn it into a status and a message.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <optional>

#include "tandem/tandem_abi.h"

namespace tandem {

enum class Status : uint32_t {
  ok = TANDEM_OK,
  pending = TANDEM_PENDING,
  invalid_packet = TANDEM_INVALID_PACKET,
  unknown_function = TANDEM_UNKNOWN_FUNCTION,
  not_accelerated = TANDEM_NOT_ACCELERATED,
  queue_full = TANDEM_QUEUE_FULL,
  translation_fault = TANDEM_TRANSLATION_FAULT,
  device_error = TANDEM_DEVICE_ERROR,
  cancelled = TANDEM_CANCELLED,
  disconnected = TANDEM_DISCONNECTED,
  job_too_large = TANDEM_JOB_TOO_LARGE,
  dependency_failed = TANDEM_DEPENDENCY_FAILED,
  invalid_argument = TANDEM_INVALID_ARGUMENT,
  no_memory = TANDEM_NO_MEMORY,
  limit_exceeded = TANDEM_LIMIT_EXCEEDED,
  timeout = TANDEM_TIMEOUT,
  protocol_error = TANDEM_PROTOCOL_ERROR,
  permission_denied = TANDEM_PERMISSION_DENIED,
  io_error = TANDEM_IO_ERROR,
  buffer_unmapped = TANDEM_BUFFER_UNMAPPED,
  device_memory_full = TANDEM_DEVICE_MEMORY_FULL,
  access_unsupported = TANDEM_ACCESS_UNSUPPORTED,
  service_failed = TANDEM_SERVICE_FAILED,
};

constexpr uint32_t to_wire(Status s) { return static_cast<uint32_t>(s); }
constexpr Status from_wire(uint32_t v) {
  return v < TANDEM_STATUS_COUNT_ ? static_cast<Status>(v) : Status::protocol_error;
}

// Stable lower-case name, e.g. "translation_fault".
std::string_view to_string(Status s);

// Set-up error with a status and a human-readable message.
class Error : public std::runtime_error {
 public:
  Error(Status status, const std::string& message) : std::runtime_error(message), status_(status) {}
  Status status() const { return status_; }

 private:
  Status status_;
};

// A value or a failure status with a message. Deliberately small: value(), status(), message().
template <class T>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Status status, std::string message = {}) : status_(status), message_(std::move(message)) {
    if (status_ == Status::ok) status_ = Status::invalid_argument;  // a failure must say what failed
  }

  bool ok() const { return value_.has_value(); }
  explicit operator bool() const { return ok(); }
  Status status() const { return ok() ? Status::ok : status_; }
  const std::string& message() const { return message_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  // Throws tandem::Error on failure; for set-up code only.
  T& expect() & {
    if (!ok()) throw Error(status(), message());
    return value();
  }
  T&& expect() && {
    if (!ok()) throw Error(status(), message());
    return std::move(*this).value();
  }

 private:
  std::optional<T> value_;
  Status status_ = Status::ok;
  std::string message_;
};

}  // namespace tandem
