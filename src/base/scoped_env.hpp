// An environment variable set (or unset, with a null value) for the life of the object; what was there
// before comes back when it ends. For tests and tools that run the library under a setting of its
// environment ($TANDEM_MODE, $TANDEM_LEARNED_DIR, ...). Not thread-safe, like setenv itself.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

namespace tandem {

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace tandem
