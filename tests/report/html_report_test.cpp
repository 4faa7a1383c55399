// report.html as written (before any browser): self-contained, its data intact and unable to end
// its script element early; and what --plots reads back from a browser's DOM.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "report/html_report.h"
#include "report/plots_export.h"
#include "report/report_assets.h"

namespace sigmatrace::report {
namespace {

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

TEST(HtmlReport, InlinedScriptsCannotEndTheirElement) {
  // render_html_report inlines them as they are: a "</script" or "<!--" in them would cut the page.
  for (std::string_view asset : {echarts_js(), report_js()}) {
    EXPECT_GT(asset.size(), 1000u);
    EXPECT_EQ(lower(asset).find("</script"), std::string::npos);
    EXPECT_EQ(asset.find("<!--"), std::string::npos);
  }
  EXPECT_NE(echarts_js().find("echarts"), std::string::npos);
  EXPECT_NE(report_css().find(".figure"), std::string::npos);
}

TEST(HtmlReport, SelfContainedWithTheAggregateIntact) {
  nlohmann::json agg = {{"format", "sigmatrace-aggregate"}, {"experiment", "/exp/<b>&\"x\""},
                        {"label", "</script><script>alert(1)</script><!-- é"}, {"bad_utf8", std::string("\xff\xfe")}};
  const std::string page = render_html_report(agg);
  EXPECT_EQ(count(page, "<script"), 3u);  // the data, ECharts, the report
  EXPECT_EQ(count(lower(page), "</script"), 3u);
  for (const char* external : {"<script src", "<link", "<iframe"}) EXPECT_EQ(page.find(external), std::string::npos) << external;
  EXPECT_NE(page.find("<title>sigmatrace report: /exp/&lt;b&gt;&amp;&quot;x&quot;</title>"), std::string::npos);
  // The JSON between the data element's tags is the aggregate (with the invalid UTF-8 replaced).
  const std::string open = "<script type=\"application/json\" id=\"sigmatrace-aggregate\">";
  const size_t a = page.find(open) + open.size(), b = page.find("</script>", a);
  nlohmann::json back = nlohmann::json::parse(page.substr(a, b - a));
  EXPECT_EQ(back["label"], agg["label"]);
  EXPECT_EQ(back["experiment"], agg["experiment"]);
  EXPECT_EQ(back["bad_utf8"], "\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(PlotsExport, ReadsTheLastExportElementOfADumpedDom) {
  std::string json;
  EXPECT_FALSE(extract_export_json("<html><body>nothing</body></html>", &json));
  const std::string dom =
      "<script>// a comment naming <pre id=\"sigmatrace-export\"> ...</script>"
      "<pre id=\"sigmatrace-export\">{\"f\":{\"svg\":\"&lt;svg a=\\\"1\\\"&gt;&amp;&lt;/svg&gt;\"}}</pre></body>";
  ASSERT_TRUE(extract_export_json(dom, &json));
  EXPECT_EQ(nlohmann::json::parse(json)["f"]["svg"], "<svg a=\"1\">&</svg>");
}

TEST(PlotsExport, DecodesBase64DataUrls) {
  std::string bytes;
  ASSERT_TRUE(decode_data_url("data:image/png;base64,iVBORw0KGgo=", &bytes));
  EXPECT_EQ(bytes, std::string("\x89PNG\r\n\x1a\n", 8));
  ASSERT_TRUE(decode_data_url("data:text/plain;base64,YWJj", &bytes));
  EXPECT_EQ(bytes, "abc");
  EXPECT_FALSE(decode_data_url("data:image/png;base64,iVBO*w0K", &bytes));
  EXPECT_FALSE(decode_data_url("http://example.com/x.png", &bytes));
}

TEST(PlotsExport, ABrowserThatIsNotThereIsNamed) {
  ::setenv("SIGMATRACE_CHROMIUM", "/nonexistent/chromium", 1);
  std::string error;
  EXPECT_EQ(find_chromium(&error), "");
  EXPECT_EQ(error, "SIGMATRACE_CHROMIUM=/nonexistent/chromium is not an executable file");
  PlotsExport out;
  EXPECT_FALSE(export_plots("/nonexistent/report.html", "/nonexistent/plots", &out, &error));
  ::unsetenv("SIGMATRACE_CHROMIUM");
  const std::string path = std::getenv("PATH") ? std::getenv("PATH") : "";
  ::setenv("PATH", "/nonexistent", 1);
  EXPECT_EQ(find_chromium(&error), "");
  EXPECT_NE(error.find("none found"), std::string::npos) << error;
  ::setenv("PATH", path.c_str(), 1);
}

}  // namespace
}  // namespace sigmatrace::report
