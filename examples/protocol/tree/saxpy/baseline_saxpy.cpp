// y = a*x + y over 1M doubles, one element at a time through std::vector::at
// (bounds-checked): the baseline.
#include <vector>

#include "warpt_protocol.hpp"

struct Saxpy : warpt::Benchmark {
    std::vector<double> x, y;
    void setup() override {
        x.assign(1 << 20, 0.0);
        for (std::size_t i = 0; i < x.size(); ++i) x[i] = double(i % 1000) / 1000.0;
    }
    void call() override {
        y.assign(x.size(), 1.0);
        for (std::size_t i = 0; i < x.size(); ++i) y.at(i) = 2.5 * x.at(i) + y.at(i);
    }
    std::string validate() override {
        return y.size() == x.size() && y[999] == 2.5 * 0.999 + 1.0 ? "" : "y[999] is wrong";
    }
    std::vector<double> output() override { return {y.begin(), y.begin() + 4096}; }
};

int main() {
    Saxpy b;
    return warpt::serve(b);
}
