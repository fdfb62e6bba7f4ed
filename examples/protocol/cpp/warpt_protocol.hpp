// warpt's benchmark protocol for C++ (docs/protocol.md), in one header.
//
// Derive from warpt::Benchmark, implement call() (one call of the code
// under test) and whichever of setup(), teardown(), validate() and
// output() you need, and hand it to warpt::serve() from main():
//
//     #include "warpt_protocol.hpp"
//     struct Saxpy : warpt::Benchmark {
//         void call() override { ... }
//     };
//     int main() { Saxpy b; return warpt::serve(b); }
//
// serve() answers warpt's requests, one JSON object per line on stdin and
// stdout, until "exit". Before anything else it moves the protocol onto
// private duplicates of stdin and stdout, points fd 1 at stderr and fd 0 at
// /dev/null, so whatever the benchmark prints (printf, std::cout, a
// library) never reaches warpt, and whatever it reads from stdin is never
// one of warpt's requests.
// Timing is std::chrono::steady_clock around each batch of calls.
//
// C++17, the standard library only.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

namespace warpt {

/// A benchmark: the protocol calls setup() once, call() as many times as
/// warpt's stopping rule asks, then validate() and teardown().
struct Benchmark {
    virtual ~Benchmark() = default;
    /// Allocates and fills inputs; not timed.
    virtual void setup() {}
    /// One call of the code under test; timed.
    virtual void call() = 0;
    /// What is wrong with the result of the last call; empty when it is right.
    virtual std::string validate() { return {}; }
    /// The last call's numbers, compared against the baseline's for accuracy.
    virtual std::vector<double> output() { return {}; }
    /// Releases what setup() took; not timed.
    virtual void teardown() {}
};

namespace detail {

/// The value of string field `key` in the one-line JSON object `line`
/// (the escapes warpt writes undone); empty when absent.
inline std::string string_field(const std::string& line, const std::string& key) {
    std::string pattern = "\"" + key + "\":";
    auto at = line.find(pattern);
    if (at == std::string::npos) return {};
    at = line.find('"', at + pattern.size());
    if (at == std::string::npos) return {};
    std::string out;
    for (auto i = at + 1; i < line.size(); ++i) {
        char c = line[i];
        if (c == '"') break;
        if (c == '\\' && i + 1 < line.size()) {
            char e = line[++i];
            out += e == 'n' ? '\n' : e == 't' ? '\t' : e;  // \" \\ \/ as themselves
        } else {
            out += c;
        }
    }
    return out;
}

/// The value of integer field `key`, or `fallback` when absent.
inline std::uint64_t int_field(const std::string& line, const std::string& key,
                               std::uint64_t fallback) {
    std::string pattern = "\"" + key + "\":";
    auto at = line.find(pattern);
    if (at == std::string::npos) return fallback;
    at += pattern.size();
    while (at < line.size() && line[at] == ' ') ++at;
    return std::strtoull(line.c_str() + at, nullptr, 10);
}

/// `text` as a JSON string literal.
inline std::string quoted(const std::string& text) {
    std::string out = "\"";
    for (char c : text) {
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\t': out += "\\t"; break;
            default:
                if (static_cast<unsigned char>(c) < 0x20) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", c);
                    out += buf;
                } else {
                    out += c;
                }
        }
    }
    return out + "\"";
}

/// Writes the last call's numbers to `path` as a JSON array (NaN and
/// infinities as null); false when the file cannot be written.
inline bool write_output(const std::string& path, const std::vector<double>& values) {
    std::FILE* f = std::fopen(path.c_str(), "w");
    if (!f) return false;
    std::fputc('[', f);
    for (std::size_t i = 0; i < values.size(); ++i) {
        if (i) std::fputc(',', f);
        if (std::isfinite(values[i])) {
            std::fprintf(f, "%.17g", values[i]);
        } else {
            std::fputs("null", f);
        }
    }
    std::fputc(']', f);
    return std::fclose(f) == 0;
}

/// Lines read from a file descriptor: the protocol's requests, on a
/// private duplicate of stdin.
class LineReader {
   public:
    explicit LineReader(int fd) : fd_(fd) {}

    /// The next line (without its newline); false at the end of input.
    bool next(std::string& line) {
        for (;;) {
            std::size_t nl = buf_.find('\n');
            if (nl != std::string::npos) {
                line = buf_.substr(0, nl);
                buf_.erase(0, nl + 1);
                return true;
            }
            char chunk[4096];
            ssize_t n = ::read(fd_, chunk, sizeof chunk);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) {
                if (buf_.empty()) return false;
                line.swap(buf_);
                buf_.clear();
                return true;
            }
            buf_.append(chunk, static_cast<std::size_t>(n));
        }
    }

   private:
    int fd_;
    std::string buf_;
};

}  // namespace detail

/// Answers warpt's requests for `bench` until "exit" (or end of input).
/// Returns main()'s exit status.
inline int serve(Benchmark& bench) {
    // The protocol's channels: private duplicates of stdin and stdout;
    // fd 1 then points at stderr and fd 0 at /dev/null, so the benchmark's
    // own output stays off the replies and its reads of stdin never eat a
    // request.
    std::fflush(stdout);
    int channel_fd = dup(1);
    if (channel_fd < 0 || dup2(2, 1) < 0) return 3;
    std::FILE* channel = fdopen(channel_fd, "w");
    if (!channel) return 3;
    int requests_fd = dup(0);
    int null_fd = open("/dev/null", O_RDONLY);
    if (requests_fd < 0 || null_fd < 0 || dup2(null_fd, 0) < 0) return 3;
    close(null_fd);
    detail::LineReader requests(requests_fd);
    auto reply = [&](const std::string& json) {
        std::fputs(json.c_str(), channel);
        std::fputc('\n', channel);
        std::fflush(channel);
    };
    std::string line;
    while (requests.next(line)) {
        std::string op = detail::string_field(line, "op");
        try {
            if (op == "load") {
                reply(R"({"ok": true, "config": {}, "timing": "host", "cold_cache": false})");
            } else if (op == "setup") {
                bench.setup();
                reply(R"({"ok": true})");
            } else if (op == "run") {
                std::uint64_t calls = detail::int_field(line, "calls", 1);
                auto start = std::chrono::steady_clock::now();
                for (std::uint64_t i = 0; i < calls; ++i) bench.call();
                auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                              std::chrono::steady_clock::now() - start)
                              .count();
                reply("{\"ok\": true, \"elapsed_ns\": " + std::to_string(ns) + "}");
            } else if (op == "output") {
                std::vector<double> values = bench.output();
                std::string path = detail::string_field(line, "path");
                std::string out = R"({"ok": true, "timing": "host", "timer_resolution_ns": )" +
                                  std::to_string(std::chrono::steady_clock::period::num * 1000000000LL /
                                                 std::chrono::steady_clock::period::den);
                if (!values.empty()) {
                    if (!path.empty() && !detail::write_output(path, values)) {
                        reply("{\"ok\": false, \"error\": " +
                              detail::quoted("cannot write the output to " + path) + "}");
                        continue;
                    }
                    out += ", \"output_count\": " + std::to_string(values.size());
                }
                reply(out + "}");
            } else if (op == "validate") {
                std::string problem = bench.validate();
                reply(problem.empty() ? R"({"ok": true, "problem": null})"
                                      : "{\"ok\": true, \"problem\": " + detail::quoted(problem) + "}");
            } else if (op == "teardown") {
                bench.teardown();
                reply(R"({"ok": true})");
            } else if (op == "exit") {
                reply(R"({"ok": true})");
                return 0;
            } else {
                reply("{\"ok\": false, \"error\": " + detail::quoted("unknown request '" + op + "'") + "}");
            }
        } catch (const std::exception& e) {
            reply("{\"ok\": false, \"error\": " + detail::quoted(op + ": " + e.what()) + "}");
        }
    }
    return 0;
}

}  // namespace warpt
