// net/spdy.h: frames both ways, compressed header blocks over one zlib
// stream, the bounds, and the server session's answers to hostile input.
#include "net/spdy.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <string>

namespace kplane::net {
namespace {

// Everything the reader returns for `bytes`, fed `piece` bytes at a time.
std::vector<SpdyFrame> ReadAll(SpdyFrameReader* r, std::string_view bytes,
                               size_t piece = 1 << 20) {
  std::vector<SpdyFrame> out;
  while (!bytes.empty()) {
    r->Feed(bytes.substr(0, piece));
    bytes.remove_prefix(std::min(piece, bytes.size()));
    for (;;) {
      auto f = r->Next();
      EXPECT_TRUE(f.ok()) << f.status();
      if (!f.ok() || !f->has_value()) break;
      out.push_back(std::move(**f));
    }
  }
  return out;
}

// A zlib stream primed with `dictionary`, sync-flushed: what a peer sends.
std::string Deflate(std::string_view block, std::string_view dictionary) {
  z_stream z{};
  EXPECT_EQ(deflateInit(&z, Z_BEST_COMPRESSION), Z_OK);
  EXPECT_EQ(deflateSetDictionary(
                &z, reinterpret_cast<const Bytef*>(dictionary.data()),
                static_cast<uInt>(dictionary.size())),
            Z_OK);
  std::string out(deflateBound(&z, block.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(block.data()));
  z.avail_in = static_cast<uInt>(block.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_SYNC_FLUSH), Z_OK);
  out.resize(out.size() - z.avail_out);
  deflateEnd(&z);
  return out;
}

// A SYN_STREAM frame around an already compressed header block.
std::string RawSynStream(uint32_t id, std::string_view compressed) {
  std::string p;
  for (uint32_t v : {id, 0u}) {
    for (int s = 24; s >= 0; s -= 8) p.push_back(static_cast<char>(v >> s));
  }
  p.push_back(0);
  p.push_back(0);
  p.append(compressed);
  std::string f = {'\x80', '\x03', '\x00', '\x01', '\x00'};
  f.push_back(static_cast<char>(p.size() >> 16));
  f.push_back(static_cast<char>(p.size() >> 8));
  f.push_back(static_cast<char>(p.size()));
  return f + p;
}

TEST(SpdyTest, DictionaryIsTheDrafts) {
  const std::string& d = SpdyHeaderDictionary();
  EXPECT_EQ(d.size(), 1423u);
  EXPECT_EQ(adler32(1, reinterpret_cast<const Bytef*>(d.data()),
                    static_cast<uInt>(d.size())),
            0xe3c6a7c2u);
}

TEST(SpdyTest, FramesRoundTripWithCompressedHeaders) {
  SpdyFrameWriter w;
  std::string wire;
  // Several blocks through the one compression stream: the second reuses
  // the first's history, so the reader must keep its stream too.
  const SpdyHeaders error = {{"streamtype", "error"}};
  const SpdyHeaders stdin_headers = {{"streamtype", "stdin"},
                                     {"multi", std::string("a\0b", 3)}};
  wire += w.SynStream(1, error, 0, 0, 2);
  wire += w.SynStream(3, stdin_headers, kSpdyFlagFin);
  wire += w.SynReply(1, {});
  wire += w.Headers(3, {{"x", "y"}}, true);
  wire += EncodeSpdyData(3, "hello", true);
  wire += EncodeSpdyData(5, std::string(70000, 'z'), false);
  wire += EncodeSpdyRstStream(7, SpdyRstStatus::kCancel);
  wire += EncodeSpdySettings({{.flags = 1, .id = 7, .value = 65536}});
  wire += EncodeSpdyPing(9);
  wire += EncodeSpdyWindowUpdate(3, 1024);
  wire += EncodeSpdyGoAway(3, SpdyGoAwayStatus::kOk);
  for (size_t piece : {size_t{1}, size_t{7}, size_t{1} << 20}) {
    SpdyFrameReader r;
    std::vector<SpdyFrame> f = ReadAll(&r, wire, piece);
    ASSERT_EQ(f.size(), 11u) << piece;
    EXPECT_EQ(f[0].type, SpdyFrameType::kSynStream);
    EXPECT_EQ(f[0].stream_id, 1u);
    EXPECT_EQ(f[0].priority, 2);
    EXPECT_EQ(f[0].headers, error);
    EXPECT_EQ(f[1].headers, stdin_headers);
    EXPECT_EQ(f[1].flags, kSpdyFlagFin);
    EXPECT_EQ(f[2].type, SpdyFrameType::kSynReply);
    EXPECT_TRUE(f[2].headers.empty());
    EXPECT_EQ(f[3].type, SpdyFrameType::kHeaders);
    EXPECT_EQ(f[3].flags, kSpdyFlagFin);
    EXPECT_EQ(f[4].type, SpdyFrameType::kData);
    EXPECT_EQ(f[4].data, "hello");
    EXPECT_EQ(f[4].flags, kSpdyFlagFin);
    EXPECT_EQ(f[5].data.size(), 70000u);
    EXPECT_EQ(f[5].stream_id, 5u);
    EXPECT_EQ(f[6].status, static_cast<uint32_t>(SpdyRstStatus::kCancel));
    ASSERT_EQ(f[7].settings.size(), 1u);
    EXPECT_EQ(f[7].settings[0].id, 7u);
    EXPECT_EQ(f[7].settings[0].value, 65536u);
    EXPECT_EQ(f[8].ping_id, 9u);
    EXPECT_EQ(f[9].window_delta, 1024u);
    EXPECT_EQ(f[10].type, SpdyFrameType::kGoAway);
    EXPECT_EQ(f[10].stream_id, 3u);
  }
}

TEST(SpdyTest, HeaderBlocksAreChecked) {
  EXPECT_TRUE(ParseSpdyHeaderBlock(EncodeSpdyHeaderBlock({{"a", "1"}})).ok());
  for (const std::string& bad :
       {std::string("\0\0", 2), EncodeSpdyHeaderBlock({{"A", "1"}}),
        EncodeSpdyHeaderBlock({{"", "1"}}),
        EncodeSpdyHeaderBlock({{"a", "1"}, {"a", "2"}}),
        EncodeSpdyHeaderBlock({{"a", "1"}}) + "x",
        EncodeSpdyHeaderBlock({{"a", "1"}}).substr(0, 10),
        std::string("\xff\xff\xff\xff", 4)}) {
    EXPECT_FALSE(ParseSpdyHeaderBlock(bad).ok());
  }
}

TEST(SpdyTest, ReaderBoundsAndErrors) {
  struct Case {
    const char* what;
    std::string bytes;
  };
  SpdyFrameWriter w;
  std::string big_block = EncodeSpdyHeaderBlock(
      {{"bomb", std::string(1 << 20, 'a')}});  // inflates to 1 MiB
  const std::string& dict = SpdyHeaderDictionary();
  std::vector<Case> cases = {
      {"frame over the limit", EncodeSpdyData(1, std::string(5000, 'x'), 0)},
      {"version 2",
       std::string("\x80\x02\x00\x06\x00\x00\x00\x04\0\0\0\1", 12)},
      {"short ping", std::string("\x80\x03\x00\x06\x00\x00\x00\x02\0\1", 10)},
      {"settings count lies",
       std::string("\x80\x03\x00\x04\x00\x00\x00\x04\xff\xff\xff\xff", 12)},
      {"header block bomb", RawSynStream(1, Deflate(big_block, dict))},
      {"another dictionary",
       RawSynStream(1, Deflate(EncodeSpdyHeaderBlock({{"a", "b"}}), "xyz"))},
      {"not zlib", RawSynStream(1, "garbage!")},
      {"empty header block", RawSynStream(1, "")},
  };
  for (const Case& c : cases) {
    SpdyFrameReader r(
        {.max_frame_bytes = 4096, .max_header_block_bytes = 16 * 1024});
    r.Feed(c.bytes);
    auto f = r.Next();
    EXPECT_FALSE(f.ok()) << c.what;
    r.Feed(EncodeSpdyPing(1));  // stays failed
    EXPECT_FALSE(r.Next().ok()) << c.what;
  }
  // Unknown control types (CREDENTIAL is 10) are skipped.
  SpdyFrameReader r;
  r.Feed(
      std::string("\x80\x03\x00\x0a\x00\x00\x00\x03"
                  "abc",
                  11));
  r.Feed(EncodeSpdyPing(5));
  auto f = r.Next();
  ASSERT_TRUE(f.ok() && f->has_value());
  EXPECT_EQ((*f)->ping_id, 5u);
}

// The server session: replies, pings, and the stream rules.
TEST(SpdyTest, ServerSessionStreams) {
  SpdyServerSession s({.max_streams = 2});
  SpdyFrameWriter client;
  std::string to_client;
  s.Feed(client.SynStream(1, {{"streamtype", "error"}}));
  s.Feed(client.SynStream(3, {{"streamtype", "stdin"}}));
  s.Feed(client.SynStream(5, {{"streamtype", "stdout"}}));  // over 2
  s.Feed(EncodeSpdyPing(7));
  s.Feed(EncodeSpdyData(3, "ls\n", false));
  s.Feed(EncodeSpdyData(3, "", true));
  s.Feed(EncodeSpdyData(3, "late", false));
  s.Feed(EncodeSpdyData(9, "nobody", false));
  s.Feed(EncodeSpdyRstStream(1, SpdyRstStatus::kCancel));
  s.Feed(EncodeSpdyGoAway(3, SpdyGoAwayStatus::kOk));
  std::vector<SpdyEvent> events;
  for (;;) {
    auto e = s.Next(&to_client);
    ASSERT_TRUE(e.ok()) << e.status();
    if (!e->has_value()) break;
    if ((*e)->kind == SpdyEvent::kNewStream) {
      to_client += s.Reply((*e)->stream_id);
    }
    events.push_back(std::move(**e));
  }
  ASSERT_EQ(events.size(), 6u);
  EXPECT_EQ(events[0].kind, SpdyEvent::kNewStream);
  EXPECT_EQ(events[0].headers, (SpdyHeaders{{"streamtype", "error"}}));
  EXPECT_EQ(events[1].stream_id, 3u);
  EXPECT_EQ(events[2].kind, SpdyEvent::kData);
  EXPECT_EQ(events[2].data, "ls\n");
  EXPECT_FALSE(events[2].fin);
  EXPECT_TRUE(events[3].fin);
  EXPECT_EQ(events[4].kind, SpdyEvent::kReset);
  EXPECT_EQ(events[5].kind, SpdyEvent::kGoAway);

  // What the client got: two SYN_REPLYs (readable with a fresh reader:
  // our compression stream), the refusal of 5, the ping echo, and the
  // resets of the data after FIN and on an unknown stream, in order.
  SpdyFrameReader r;
  std::vector<SpdyFrame> f = ReadAll(&r, to_client);
  ASSERT_EQ(f.size(), 6u);
  EXPECT_EQ(f[0].type, SpdyFrameType::kSynReply);
  EXPECT_EQ(f[0].stream_id, 1u);
  EXPECT_EQ(f[1].type, SpdyFrameType::kSynReply);
  EXPECT_EQ(f[1].stream_id, 3u);
  EXPECT_EQ(f[2].type, SpdyFrameType::kRstStream);
  EXPECT_EQ(f[2].stream_id, 5u);
  EXPECT_EQ(f[2].status, static_cast<uint32_t>(SpdyRstStatus::kRefusedStream));
  EXPECT_EQ(f[3].type, SpdyFrameType::kPing);
  EXPECT_EQ(f[3].ping_id, 7u);
  EXPECT_EQ(f[4].status,
            static_cast<uint32_t>(SpdyRstStatus::kStreamAlreadyClosed));
  EXPECT_EQ(f[5].stream_id, 9u);
  EXPECT_EQ(f[5].status, static_cast<uint32_t>(SpdyRstStatus::kInvalidStream));
}

// Stream ids that go backwards, are even or zero end the session with a
// GOAWAY PROTOCOL_ERROR, as does a malformed frame.
TEST(SpdyTest, ServerSessionErrorsEndWithGoAway) {
  struct Case {
    const char* what;
    std::vector<uint32_t> ids;
  };
  for (const Case& c : {Case{"even", {2}}, Case{"zero", {0}},
                        Case{"backwards", {5, 3}}, Case{"repeated", {1, 1}}}) {
    SpdyServerSession s;
    SpdyFrameWriter client;
    for (uint32_t id : c.ids) s.Feed(client.SynStream(id, {{"a", "b"}}));
    std::string to_client;
    Status err;
    for (;;) {
      auto e = s.Next(&to_client);
      if (!e.ok()) {
        err = e.status();
        break;
      }
      if (!e->has_value()) break;
    }
    EXPECT_FALSE(err.ok()) << c.what;
    SpdyFrameReader r;
    std::vector<SpdyFrame> f = ReadAll(&r, to_client);
    ASSERT_EQ(f.size(), 1u) << c.what;
    EXPECT_EQ(f[0].type, SpdyFrameType::kGoAway);
    EXPECT_EQ(f[0].status,
              static_cast<uint32_t>(SpdyGoAwayStatus::kProtocolError));
    EXPECT_FALSE(s.Next(&to_client).ok()) << c.what;  // stays failed
  }
  SpdyServerSession s({.reader = {.max_frame_bytes = 100}});
  s.Feed(EncodeSpdyData(1, std::string(200, 'x'), false));
  std::string to_client;
  EXPECT_FALSE(s.Next(&to_client).ok());
  EXPECT_EQ(to_client, EncodeSpdyGoAway(0, SpdyGoAwayStatus::kProtocolError));
}

}  // namespace
}  // namespace kplane::net
