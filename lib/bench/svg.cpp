#include "bench/svg.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace mstar::bench {

namespace {

constexpr double W = 480, H = 320, L = 70, R = 20, T = 40, B = 50;

std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) o += c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '&' ? "&amp;" : std::string(1, c);
  return o;
}

std::string num(double v) {
  if (v >= 1e6) return fmt::format("{:.0f}M", v / 1e6);
  if (v >= 1e3) return fmt::format("{:.0f}k", v / 1e3);
  if (v >= 10) return fmt::format("{:.0f}", v);
  return fmt::format("{:.2g}", v);
}

}  // namespace

std::string line_chart(const std::string& title, const std::string& x_label, const std::string& y_label,
                       const std::vector<Series>& series, bool log_x) {
  double x0 = INFINITY, x1 = -INFINITY, y1 = 0;
  auto fx = [&](double x) { return log_x ? std::log2(x) : x; };
  for (const auto& s : series)
    for (size_t i = 0; i < s.x.size(); ++i) x0 = std::min(x0, fx(s.x[i])), x1 = std::max(x1, fx(s.x[i])), y1 = std::max(y1, s.y[i]);
  if (!(x1 > x0)) x1 = x0 + 1;
  if (y1 <= 0) y1 = 1;
  y1 *= 1.1;
  auto px = [&](double x) { return L + (fx(x) - x0) / (x1 - x0) * (W - L - R); };
  auto py = [&](double y) { return H - B - y / y1 * (H - T - B); };
  std::string o = fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" font-family="sans-serif" font-size="11">)", W, H);
  o += fmt::format(R"(<rect width="{}" height="{}" fill="white"/><text x="{}" y="20" font-size="13" text-anchor="middle">{}</text>)", W, H, W / 2, esc(title));
  o += fmt::format(R"(<line x1="{0}" y1="{1}" x2="{2}" y2="{1}" stroke="black"/><line x1="{0}" y1="{3}" x2="{0}" y2="{1}" stroke="black"/>)", L, H - B, W - R, T);
  for (int i = 0; i <= 4; ++i) {
    const double y = y1 * i / 4;
    o += fmt::format(R"(<line x1="{}" y1="{:.1f}" x2="{}" y2="{:.1f}" stroke="#ddd"/><text x="{}" y="{:.1f}" text-anchor="end">{}</text>)", L, py(y), W - R, py(y), L - 5, py(y) + 4, num(y));
  }
  if (!series.empty())
    for (double x : series[0].x)
      o += fmt::format(R"(<text x="{:.1f}" y="{}" text-anchor="middle">{}</text>)", px(x), H - B + 15, num(x));
  o += fmt::format(R"(<text x="{}" y="{}" text-anchor="middle">{}</text>)", (L + W - R) / 2, H - 12, esc(x_label));
  o += fmt::format(R"svg(<text x="14" y="{}" text-anchor="middle" transform="rotate(-90 14 {})">{}</text>)svg", (T + H - B) / 2, (T + H - B) / 2, esc(y_label));
  for (size_t k = 0; k < series.size(); ++k) {
    const auto& s = series[k];
    std::string pts;
    for (size_t i = 0; i < s.x.size(); ++i) pts += fmt::format("{:.1f},{:.1f} ", px(s.x[i]), py(s.y[i]));
    o += fmt::format(R"(<polyline fill="none" stroke="{}" stroke-width="2" points="{}"/>)", s.color, pts);
    for (size_t i = 0; i < s.x.size(); ++i) o += fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="3" fill="{}"/>)", px(s.x[i]), py(s.y[i]), s.color);
    o += fmt::format(R"(<rect x="{}" y="{}" width="12" height="3" fill="{}"/><text x="{}" y="{}">{}</text>)", L + 10, T + 8 + 16 * static_cast<double>(k), s.color, L + 26, T + 12 + 16 * static_cast<double>(k), esc(s.name));
  }
  return o + "</svg>";
}

std::string bar_chart(const std::string& title, const std::string& x_label, const std::vector<Bar>& bars) {
  const double row = 22, h = T + B + row * static_cast<double>(bars.size()), left = 210;
  double mx = 1.0;
  for (const auto& b : bars) mx = std::max(mx, b.value);
  std::string o = fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" font-family="sans-serif" font-size="11">)", W + 120, h);
  o += fmt::format(R"(<rect width="{}" height="{}" fill="white"/><text x="{}" y="20" font-size="13" text-anchor="middle">{}</text>)", W + 120, h, (W + 120) / 2, esc(title));
  // Room right of the longest bar for its label ("1459%": 6 characters of
  // 11 px sans-serif, about 40 px), so no label runs past the edge.
  constexpr double label_room = 48;
  const double span = W + 120 - left - R - label_room;
  for (size_t i = 0; i < bars.size(); ++i) {
    const double y = T + row * static_cast<double>(i);
    o += fmt::format(R"(<text x="{}" y="{:.1f}" text-anchor="end">{}</text>)", left - 6, y + 14, esc(bars[i].label));
    o += fmt::format(R"(<rect x="{}" y="{:.1f}" width="{:.1f}" height="16" fill="#4a7fb5"/>)", left, y + 2, bars[i].value / mx * span);
    o += fmt::format(R"(<text x="{:.1f}" y="{:.1f}">{:.0f}%</text>)", left + bars[i].value / mx * span + 4, y + 14, bars[i].value * 100);
  }
  const double full = left + 1.0 / mx * span;
  o += fmt::format(R"(<line x1="{0:.1f}" y1="{1}" x2="{0:.1f}" y2="{2}" stroke="red" stroke-dasharray="4"/>)", full, T, h - B + 5);
  o += fmt::format(R"(<text x="{:.1f}" y="{}" text-anchor="middle">{}</text>)", left + span / 2, h - 15, esc(x_label));
  return o + "</svg>";
}

std::string side_by_side(const std::string& left, const std::string& right) {
  // Two line charts of W x H each, the second right of the first.
  return fmt::format(R"svg(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}"><rect width="{}" height="{}" fill="white"/><g>{}</g><g transform="translate({},0)">{}</g></svg>)svg",
                     2 * W, H, 2 * W, H, left, W, right);
}

}  // namespace mstar::bench
