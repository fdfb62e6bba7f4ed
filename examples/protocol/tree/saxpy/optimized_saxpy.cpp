// y = a*x + y over 1M doubles, a plain loop the compiler vectorizes.
#include <vector>

#include "warpt_protocol.hpp"

struct Saxpy : warpt::Benchmark {
    std::vector<double> x, y;
    void setup() override {
        x.assign(1 << 20, 0.0);
        for (std::size_t i = 0; i < x.size(); ++i) x[i] = double(i % 1000) / 1000.0;
        y.resize(x.size());
    }
    void call() override {
        const double* xs = x.data();
        double* ys = y.data();
        const std::size_t n = x.size();
        for (std::size_t i = 0; i < n; ++i) ys[i] = 2.5 * xs[i] + 1.0;
    }
    std::string validate() override {
        return y[999] == 2.5 * 0.999 + 1.0 ? "" : "y[999] is wrong";
    }
    std::vector<double> output() override { return {y.begin(), y.begin() + 4096}; }
};

int main() {
    Saxpy b;
    return warpt::serve(b);
}
