// The RFC 4180 state machine for CSV and TSV.
#include "data/source/delimited.h"

#include "data/source/line_stream.h"
#include "framework/base/error.h"

namespace rota::data {

void DelimitedReader::end_field() {
  fields_.push_back(std::move(field_));
  field_.clear();
  quoted_ = false;
}

void DelimitedReader::end_record() {
  const bool blank = fields_.empty() && field_.empty() && !quoted_;
  end_field();
  if (!blank) emit_(fields_, record_line_);
  fields_.clear();
  record_open_ = false;
  record_bytes_ = 0;
  state_ = State::kFieldStart;
}

void DelimitedReader::take(char c) {
  if (!record_open_) {
    record_open_ = true;
    record_line_ = line_;
  }
  ROTA_CHECK(++record_bytes_ <= kMaxRecordBytes,
             "data: {}:{}: a record longer than {} MiB (an unclosed quote?)", file_, record_line_,
             kMaxRecordBytes >> 20);
  switch (state_) {
    case State::kCarriageReturn:
      if (c == '\n') {
        ++line_;
        end_record();
        return;
      }
      field_.push_back('\r');
      state_ = State::kUnquoted;
      [[fallthrough]];
    case State::kFieldStart:
    case State::kUnquoted:
      if (state_ == State::kFieldStart && c == '"') {
        quoted_ = true;
        field_line_ = line_;
        state_ = State::kQuoted;
      } else if (c == delimiter_) {
        end_field();
        state_ = State::kFieldStart;
      } else if (c == '\n') {
        ++line_;
        end_record();
      } else if (c == '\r') {
        state_ = State::kCarriageReturn;
      } else {
        field_.push_back(c);
        state_ = State::kUnquoted;
      }
      return;
    case State::kQuoted:
      if (c == '"') {
        state_ = State::kQuoteInQuoted;
      } else {
        if (c == '\n') ++line_;
        field_.push_back(c);
      }
      return;
    case State::kQuoteInQuoted:
      if (c == '"') {
        field_.push_back('"');
        state_ = State::kQuoted;
      } else if (c == delimiter_) {
        end_field();
        state_ = State::kFieldStart;
      } else if (c == '\n') {
        ++line_;
        end_record();
      } else if (c == '\r') {
        state_ = State::kCarriageReturn;  // only CRLF may follow; '\r' + other is refused below
      } else {
        fail(
            "data: {}:{}: '{}' after the closing quote of a field (a quote inside a quoted field "
            "is written twice: \"\")",
            file_, line_, c);
      }
      return;
  }
}

void DelimitedReader::feed(std::string_view bytes) {
  for (const char c : bytes) take(c);
}

void DelimitedReader::finish() {
  ROTA_CHECK(state_ != State::kQuoted,
             "data: {}:{}: the quoted field starting on this line is never closed (a '\"' is "
             "missing; a quote inside a quoted field is written twice: \"\")",
             file_, field_line_);
  if (state_ == State::kCarriageReturn) {
    field_.push_back('\r');
    state_ = State::kUnquoted;
  }
  if (record_open_) end_record();
}

}  // namespace rota::data
