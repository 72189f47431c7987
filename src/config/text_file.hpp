// The whole of a text file that tandem is given (a configuration, a calibration, a scenario, kernel
// sources), or tandem::Error(io_error) "cannot read <what> '<path>'".
#pragma once

#include <sys/stat.h>

#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include "abi/status.hpp"

namespace tandem::config {

inline std::string read_text_file(const std::string& path, std::string_view what) {
  // A folder opens as a stream that reads as empty (the error is swallowed by operator<<): it would
  // pass for an empty file, i.e. the built-in defaults.
  struct stat st {};
  if (stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    throw Error(Status::io_error, "cannot read " + std::string(what) + " '" + path + "': it is a folder");
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  if (in) text << in.rdbuf();
  if (!in || in.bad()) throw Error(Status::io_error, "cannot read " + std::string(what) + " '" + path + "'");
  return text.str();
}

}  // namespace tandem::config
