// See plots_export.h.
#include "report/plots_export.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

extern char** environ;

namespace sigmatrace::report {
namespace fs = std::filesystem;

namespace {

constexpr int kBrowserTimeoutS = 120;

bool executable(const std::string& p) { return !p.empty() && ::access(p.c_str(), X_OK) == 0 && !fs::is_directory(p); }

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs argv with stdout and stderr into files, killed after timeout_s; the exit status, or -1
// with *error set.
int run_to_files(const std::vector<std::string>& argv, const std::string& out, const std::string& err, int timeout_s, std::string* error) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    *error = "cannot start " + argv[0] + ": " + std::strerror(rc);
    return -1;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  int status = 0;
  while (true) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) {
      *error = std::string("waiting for the browser: ") + std::strerror(errno);
      return -1;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      *error = argv[0] + " did not finish drawing the figures in " + std::to_string(timeout_s) + " s (its messages: " + err + ")";
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string decode_entities(std::string_view s) {
  static const std::pair<std::string_view, char> kEntities[] = {{"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&#39;", '\''}, {"&nbsp;", ' '}};
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    bool done = false;
    if (s[i] == '&')
      for (const auto& [name, c] : kEntities)
        if (s.substr(i, name.size()) == name) {
          out += c;
          i += name.size() - 1;
          done = true;
          break;
        }
    if (!done) out += s[i];
  }
  return out;
}

}  // namespace

std::string find_chromium(std::string* error) {
  if (const char* env = std::getenv("SIGMATRACE_CHROMIUM"); env && *env) {
    if (executable(env)) return env;
    *error = std::string("SIGMATRACE_CHROMIUM=") + env + " is not an executable file";
    return "";
  }
  const char* path = std::getenv("PATH");
  for (const char* name : {"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}) {
    std::stringstream dirs(path ? path : "/usr/bin:/bin");
    for (std::string d; std::getline(dirs, d, ':');)
      if (!d.empty() && executable(d + "/" + name)) return d + "/" + name;
  }
  *error = "--plots draws the figures with a headless Chromium: none found (chromium, chromium-browser, google-chrome on PATH; or set SIGMATRACE_CHROMIUM; scripts/setup.sh installs Debian's chromium)";
  return "";
}

bool extract_export_json(const std::string& dom, std::string* json) {
  const std::string open = "<pre id=\"sigmatrace-export\">";
  const size_t a = dom.rfind(open);  // the last element of the body
  if (a == std::string::npos) return false;
  const size_t b = dom.find("</pre>", a);
  if (b == std::string::npos) return false;
  *json = decode_entities(std::string_view(dom).substr(a + open.size(), b - a - open.size()));
  return true;
}

bool decode_data_url(const std::string& url, std::string* bytes) {
  const std::string marker = ";base64,";
  const size_t m = url.find(marker);
  if (url.rfind("data:", 0) != 0 || m == std::string::npos) return false;
  bytes->clear();
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = m + marker.size(); i < url.size(); ++i) {
    const char c = url[i];
    int v;
    if (c >= 'A' && c <= 'Z') v = c - 'A';
    else if (c >= 'a' && c <= 'z') v = c - 'a' + 26;
    else if (c >= '0' && c <= '9') v = c - '0' + 52;
    else if (c == '+') v = 62;
    else if (c == '/') v = 63;
    else if (c == '=') break;
    else return false;
    acc = acc << 6 | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      bytes->push_back(static_cast<char>(acc >> bits & 0xff));
    }
  }
  return !bytes->empty();
}

bool export_plots(const std::string& html, const std::string& dir, PlotsExport* out, std::string* error) {
  const std::string browser = find_chromium(error);
  if (browser.empty()) return false;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    *error = "cannot create " + dir + ": " + ec.message();
    return false;
  }
  const fs::path page = fs::absolute(html, ec);
  // A profile of its own, so that a user's browser (or another export) is never touched.
  std::string profile = (fs::path(dir) / ".chromium-profile-XXXXXX").string();
  if (!::mkdtemp(profile.data())) {
    *error = "cannot create a browser profile in " + dir + ": " + std::strerror(errno);
    return false;
  }
  const std::string dom_file = profile + "/dom.html", log_file = (fs::path(dir) / "chromium.log").string();
  const int rc = run_to_files({browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
                               "--user-data-dir=" + profile, "--virtual-time-budget=30000", "--dump-dom", "file://" + page.string() + "#export"},
                              dom_file, log_file, kBrowserTimeoutS, error);
  const std::string dom = rc < 0 ? std::string() : read_file(dom_file);
  fs::remove_all(profile, ec);
  if (rc < 0) return false;
  std::string text;
  if (rc != 0 || !extract_export_json(dom, &text)) {
    *error = browser + " drew no figures from " + html + " (exit status " + std::to_string(rc) + "; its messages: " + log_file + ")";
    return false;
  }
  const nlohmann::json figures = nlohmann::json::parse(text, nullptr, false);
  if (!figures.is_object()) {
    *error = "the figures " + browser + " printed from " + html + " are not JSON";
    return false;
  }
  for (const auto& [id, f] : figures.items()) {
    std::string png;
    if (!f.contains("svg") || !f["svg"].is_string() || !f.contains("png") || !f["png"].is_string() || !decode_data_url(f["png"].get<std::string>(), &png)) {
      *error = "figure " + id + " came back from the browser without its SVG or PNG";
      return false;
    }
    const std::pair<std::string, std::string> files[] = {{id + ".svg", f["svg"].get<std::string>()}, {id + ".png", png}};
    for (const auto& [name, bytes] : files) {
      const std::string path = (fs::path(dir) / name).string();
      std::ofstream o(path, std::ios::binary | std::ios::trunc);
      if (!o || !o.write(bytes.data(), static_cast<std::streamsize>(bytes.size()))) {
        *error = "cannot write " + path + ": " + std::strerror(errno);
        return false;
      }
      out->files.push_back(path);
    }
  }
  fs::remove(log_file, ec);  // kept only when something went wrong
  return true;
}

}  // namespace sigmatrace::report
