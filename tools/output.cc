#include "output.hpp"

#include <fmt/core.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "abi/status.hpp"

namespace tandem::tools {

void write_file(const std::string& path, std::string_view text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw Error(Status::io_error, "cannot write '" + path + "': " + std::strerror(errno));
  f.write(text.data(), static_cast<std::streamsize>(text.size()));
  f.close();
  if (!f) throw Error(Status::io_error, "writing '" + path + "' failed (disk full?)");
}

namespace {

template <typename Json>
bool emit(const Json& report, const std::string& out, bool print) {
  const std::string text = report.dump(2) + "\n";
  if (!out.empty()) write_file(out, text);
  if (print) fmt::print("{}", text);
  return print;
}

}  // namespace

bool emit_json_report(const nlohmann::ordered_json& report, const std::string& out, bool print) {
  return emit(report, out, print);
}

bool emit_json_report(const nlohmann::json& report, const std::string& out, bool print) {
  return emit(report, out, print);
}

}  // namespace tandem::tools
