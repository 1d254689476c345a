#include "common/json.h"

#include <doctest/doctest.h>

#include <string>

using mc::ErrorCode;
using mc::Json;
using mc::JsonLimits;
using mc::ParseJsonDocument;

namespace {

constexpr JsonLimits kLimits{.max_depth = 8, .max_bytes = 256};

}  // namespace

TEST_CASE("a JSON document parses into a tree with numbers kept as written") {
  auto j = ParseJsonDocument(R"({"size": 3355443200, "rev": "-17", "list": [1.5e3, null],
                                 "on": true, "name": "a\tb"})", kLimits);
  REQUIRE(j.ok());
  CHECK((*j)["size"].text == "3355443200");
  CHECK((*j)["size"].Int() == 3355443200);
  CHECK((*j)["rev"].Int() == -17);
  CHECK((*j)["list"].items.size() == 2);
  CHECK((*j)["list"].items[0].text == "1.5e3");
  CHECK((*j)["list"].items[1].kind == Json::Kind::kNull);
  CHECK((*j)["on"].Bool());
  CHECK((*j)["name"].text == "a\tb");
}

TEST_CASE("absent members, members of non-objects and non-integers read as null or 0") {
  auto j = ParseJsonDocument(R"({"f": 1.5, "s": "12x", "a": [1]})", kLimits);
  REQUIRE(j.ok());
  CHECK((*j)["missing"].kind == Json::Kind::kNull);
  CHECK((*j)["a"]["x"]["y"].kind == Json::Kind::kNull);
  CHECK((*j)["f"].Int() == 0);
  CHECK((*j)["s"].Int() == 0);
  CHECK_FALSE((*j)["missing"].Bool());
}

TEST_CASE("unicode escapes decode to UTF-8, surrogate pairs to one character") {
  auto j = ParseJsonDocument(R"(["\u0041\u00e9\u20ac", "\ud83d\ude00"])", kLimits);
  REQUIRE(j.ok());
  CHECK(j->items[0].text == "A\xc3\xa9\xe2\x82\xac");
  CHECK(j->items[1].text == "\xf0\x9f\x98\x80");
  for (const char* lone : {R"("\ud83d")", R"("\ud83dx")", R"("\ude00")", R"("\ud83d\u0041")"}) {
    auto bad = ParseJsonDocument(lone, kLimits);
    CHECK_FALSE(bad.ok());
    CHECK(bad.status().message().find("surrogate") != std::string::npos);
  }
}

TEST_CASE("malformed documents are refused naming the line and the reason") {
  auto j = ParseJsonDocument("{\n\"a\": 1,\n\"b\" 2}", kLimits);
  REQUIRE_FALSE(j.ok());
  CHECK(j.status().code() == ErrorCode::INVALID_PARAMS);
  CHECK(j.status().message() == "line 3: expected ':' after \"b\"");
  for (const char* bad : {"", "{", "[1,]", "\"open", "{\"a\":1} x", "tru", "-", "\"\\q\"",
                          "\"a\x01\""}) {
    CHECK_FALSE(ParseJsonDocument(bad, kLimits).ok());
  }
}

TEST_CASE("the caller's depth and size limits are enforced") {
  CHECK(ParseJsonDocument(std::string(8, '[') + std::string(8, ']'), kLimits).ok());
  auto deep = ParseJsonDocument(std::string(10, '[') + std::string(10, ']'), kLimits);
  REQUIRE_FALSE(deep.ok());
  CHECK(deep.status().message().find("nested deeper than 8") != std::string::npos);
  auto big = ParseJsonDocument("\"" + std::string(300, 'x') + "\"", kLimits);
  REQUIRE_FALSE(big.ok());
  CHECK(big.status().message().find("larger than 256 bytes") != std::string::npos);
}
