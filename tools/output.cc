#include "output.hpp"

#include <fmt/core.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <vector>
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

void check_output_file(const std::string& path) {
  // Nothing is opened that has a reader or a side effect: an existing file is opened for appending
  // (not truncated), anything else (a pipe, a device, a link) is only asked whether it may be
  // written, and a missing file is made exclusively (never through a link) and removed again.
  struct stat st {};
  const auto fail = [&](const std::string& why) { throw Error(Status::io_error, "cannot write '" + path + "': " + why); };
  if (lstat(path.c_str(), &st) == 0) {
    if (S_ISLNK(st.st_mode) && stat(path.c_str(), &st) != 0) return;  // a link to a file yet to be made
    if (S_ISDIR(st.st_mode)) fail("it is a folder");
    if (S_ISREG(st.st_mode)) {
      const int fd = open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
      if (fd < 0) fail(std::strerror(errno));
      close(fd);
    } else if (access(path.c_str(), W_OK) != 0) {
      fail(std::strerror(errno));
    }
    return;
  }
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) fail(std::strerror(errno));
  close(fd);
  unlink(path.c_str());
}

CLI::Validator writable_file() {
  return CLI::Validator(
      [](std::string& path) -> std::string {
        try {
          check_output_file(path);
        } catch (const Error& e) {
          return e.what();
        }
        return {};
      },
      "FILE", "writable file");
}

OutputDir::OutputDir(std::string dir) : dir_(std::move(dir)), exceptions_(std::uncaught_exceptions()) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(dir_, ec)) return;
  if (fs::exists(dir_, ec)) throw Error(Status::io_error, "cannot use '" + dir_ + "' as the output folder: it is a file");
  // The folders this makes, deepest first: the folder and the parents that do not exist yet.
  std::vector<std::string> missing;
  for (fs::path p = dir_; !p.empty() && !fs::exists(p, ec); p = p.parent_path()) missing.push_back(p.string());
  fs::create_directories(dir_, ec);
  if (ec || !fs::is_directory(dir_)) {
    throw Error(Status::io_error, "cannot make the output folder '" + dir_ + "': " +
                                      (ec ? ec.message() : std::string("a part of its path is a file")));
  }
  made_ = std::move(missing);
}

OutputDir::~OutputDir() {
  if (made_.empty() || std::uncaught_exceptions() <= exceptions_) return;
  for (const std::string& folder : made_) {  // deepest first; a folder something was written to stays
    std::error_code ec;
    if (!std::filesystem::is_empty(folder, ec) || ec || !std::filesystem::remove(folder, ec)) return;
  }
}

CLI::Validator number_in(double min, double max) {
  return CLI::Validator(
      [min, max](std::string& text) -> std::string {
        double v = 0;
        if (!CLI::detail::lexical_cast(text, v) || !(v >= min && v <= max)) {
          return fmt::format("{} is not a number in [{:g}, {:g}]", text, min, max);
        }
        return {};
      },
      fmt::format("NUMBER in [{:g} - {:g}]", min, max), "number_in");
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
