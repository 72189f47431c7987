#include "devices/callback_sink.hpp"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

namespace tandem::devices {

void CallbackSink::retire(std::unique_ptr<CallbackSink> sink) {
  if (sink == nullptr || sink->pending() <= 0) return;  // freed here
  CallbackSink* kept = sink.release();
#if defined(__SANITIZE_ADDRESS__)
  __lsan_ignore_object(kept);  // what it owns stays reachable through it
#endif
  (void)kept;
}

}  // namespace tandem::devices
