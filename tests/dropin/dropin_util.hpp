// Helpers of the drop-in tests: deterministic test images, running a program with extra environment
// (the preload, the runtime choice), reading files back.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace tandem::testing {

// A PGM (channels 1) or PPM (channels 3) image with smooth gradients, noise, hard edges and saturated
// patches, so that the DCT sees small and extreme coefficients. The same arguments give the same bytes.
inline void write_test_image(const std::filesystem::path& path, uint32_t width, uint32_t height, int channels,
                             uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> pixels(size_t{width} * height * channels);
  for (uint32_t y = 0; y < height; ++y) {
    for (uint32_t x = 0; x < width; ++x) {
      for (int c = 0; c < channels; ++c) {
        int v = static_cast<int>((x * (3 + c) + y * (5 - c)) % 256);                  // gradients
        if (((x / 5) + (y / 7) + c) % 9 == 0) v = ((x + y) % 2) != 0 ? 255 : 0;        // checkerboard patches
        if ((x / 13 + y / 11) % 5 == 1) v = 255 - v;                                    // hard edges
        v += static_cast<int>(rng() % 33) - 16;                                         // noise
        pixels[(size_t{y} * width + x) * channels + c] = static_cast<uint8_t>(std::clamp(v, 0, 255));
      }
    }
  }
  std::ofstream f(path, std::ios::binary);
  f << (channels == 1 ? "P5\n" : "P6\n") << width << " " << height << "\n255\n";
  f.write(reinterpret_cast<const char*>(pixels.data()), static_cast<std::streamsize>(pixels.size()));
}

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

struct RunResult {
  int status = -1;  // exit status, or -1 when it did not exit normally
  std::string out, err;
};

// Runs argv[0] with argv, the current environment plus `env` (an empty value unsets a variable).
inline RunResult run_program(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                             const std::filesystem::path& scratch) {
  const std::filesystem::path out = scratch / "stdout.txt", err = scratch / "stderr.txt";
  const pid_t pid = fork();
  if (pid == 0) {
    for (const auto& [k, v] : env) v.empty() ? unsetenv(k.c_str()) : setenv(k.c_str(), v.c_str(), 1);
    if (std::freopen(out.c_str(), "w", stdout) == nullptr || std::freopen(err.c_str(), "w", stderr) == nullptr) _exit(126);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  RunResult r;
  int status = 0;
  waitpid(pid, &status, 0);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = read_file(out);
  r.err = read_file(err);
  return r;
}

}  // namespace tandem::testing
