#pragma once
// Small SVG charts for the benchmark record: lines over a log2 x axis (the
// stream comparison) and horizontal bars (bandwidth fractions).
#include <string>
#include <vector>

namespace mstar::bench {

struct Series {
  std::string name;
  std::string color;
  std::vector<double> x, y;
};

std::string line_chart(const std::string& title, const std::string& x_label, const std::string& y_label,
                       const std::vector<Series>& series, bool log_x);

struct Bar {
  std::string label;
  double value;  // fraction in [0, 1+]
};
std::string bar_chart(const std::string& title, const std::string& x_label, const std::vector<Bar>& bars);

// Two charts side by side in one SVG document.
std::string side_by_side(const std::string& left, const std::string& right);

}  // namespace mstar::bench
