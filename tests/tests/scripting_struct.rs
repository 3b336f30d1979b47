//! The Lua `struct` library (lua_struct.c as Redis embeds it): differential tests against
//! redis-server for pack/unpack round trips, sizes and alignment, odd numeric inputs, the
//! error texts of bad formats and arguments (plain or through pcall), and read-only-ness.

use tumbler_tests::diff_against_redis as run;

#[test]
fn struct_library_matches_redis() {
    run(r##"
        EVAL "return type(struct)" 0
        EVAL "return struct.pack('=i', 1)" 0
        EVAL "return struct.pack('y', 1)" 0
        EVAL "return {pcall(struct.pack, 'y', 1)}" 0
        EVAL "return struct.size('s')" 0
        EVAL "return struct.size('!3i')" 0
        EVAL "return struct.unpack('i', 'ab')" 0
        EVAL "return struct.pack('i40', 1)" 0
        EVAL "return {struct.unpack('>i', struct.pack('>i', -5))}" 0
        EVAL "return struct.pack('s', 5)" 0
        EVAL "return struct.pack('i')" 0
        EVAL "return struct.pack('c3', 'ab')" 0
        EVAL "return struct.unpack('c0', 'ab')" 0
        EVAL "return struct.unpack('s', 'ab')" 0
        EVAL "struct.x = 1" 0
        EVAL "return struct.unpack('i', 'abcd', 0)" 0
        EVAL "return struct.size('i99999999999')" 0
        EVAL "return struct.size('!8bd')" 0
        EVAL "return struct.size('bd')" 0
        EVAL "return struct.size('!bd')" 0
        EVAL "return struct.pack('x')" 0
        EVAL "return struct.pack()" 0
        EVAL "return struct.size('y')" 0
        EVAL "return struct.size('c0')" 0
        EVAL "return struct.size('x!4i')" 0
        EVAL "return struct.unpack('y', 'ab')" 0
        EVAL "return struct.pack('i', {})" 0
        EVAL "return {struct.unpack('bc0', struct.pack('bc0', 3, 'abc'))}" 0
        EVAL "return struct.unpack('i', 'abcd', 'x')" 0
        EVAL "return {struct.unpack('s', 'abcd', -1)}" 0
        EVAL "return {pcall(struct.unpack, 'i', 'ab')}" 0
        EVAL "local s = struct.pack('<!4bi>hHlLTi3I5fdxsc2c0', -1, 7, -300, 65000, -2, 3, 99, -70000, 2^33, 1.5, -2.25, 'zz', 'ab', 'q') return {s, struct.unpack('<!4bi>hHlLTi3I5fdxsc2c0', s)}" 0
        EVAL "return struct.unpack()" 0
        EVAL "return struct.size()" 0
        EVAL "return {struct.unpack('i', 'abcdefgh', 5)}" 0
        EVAL "return {struct.unpack('!4bi', struct.pack('!4bi', 1, 2))}" 0
        EVAL "return struct.pack('>I3', 2^24 + 5)" 0
        EVAL "return {struct.unpack('<i16', struct.pack('<i16', -3))}" 0
        EVAL "return {struct.unpack('>I9', struct.pack('>I9', 12345))}" 0
        EVAL "local t = {pcall(struct.unpack, 'c0', 'x')} return {tostring(t[1]), t[2]}" 0
        EVAL "local ok, e = pcall(struct.pack, 'i') return type(e)" 0
        EVAL "return struct.pack('ff', 1.5, 'x')" 0
        EVAL "return {struct.unpack('d', struct.pack('d', 3.75))}" 0
        EVAL "return tostring(struct.unpack('>d', struct.pack('>d', 0.1)))" 0
        EVAL "return tostring(struct.unpack('<f', struct.pack('<f', 0.1)))" 0
        EVAL "return struct.pack('!16i', 1)" 0
        EVAL "return struct.pack('!0i', 1)" 0
        EVAL "return struct.pack('c', '')" 0
        EVAL "return struct.pack('s', {})" 0
        EVAL "return {struct.unpack('BBsBB', 'ab\0cd')}" 0
        EVAL "return {struct.unpack(' < b   >  h', '\1\0\2')}" 0
        EVAL "return {struct.unpack('x', 'a')}" 0
        EVAL "return {struct.unpack('x', '')}" 0
        EVAL "return struct.pack('l', 1e300)" 0
    "##);
}

#[test]
fn struct_numeric_edges_match_redis() {
    run(r##"
        EVAL "return struct.pack('>l', 1e300)" 0
        EVAL "return struct.pack('>l', -1e300)" 0
        EVAL "return struct.pack('>l', 0/0)" 0
        EVAL "return struct.pack('>l', 2^63)" 0
        EVAL "return struct.pack('>l', 2^64)" 0
        EVAL "return struct.pack('<L', 2^63 + 2^12)" 0
        EVAL "return struct.pack('<h', 70000)" 0
        EVAL "return struct.pack('<b', -129.7)" 0
        EVAL "return struct.pack('<B', '12')" 0
        EVAL "return {struct.unpack('<b', '\xff')}" 0
        EVAL "return {struct.unpack('<B', '\xff')}" 0
        EVAL "return {struct.unpack('>h', '\x80\x01')}" 0
        EVAL "return {struct.unpack('<H', '\x80\x01')}" 0
        EVAL "return {struct.unpack('<i3', '\xff\xff\xff')}" 0
        EVAL "return {struct.unpack('<I3', '\xff\xff\xff')}" 0
        EVAL "return tostring(struct.unpack('<l', struct.pack('<l', -2^53)))" 0
        EVAL "return tostring(struct.unpack('>f', struct.pack('>f', 1/0)))" 0
        EVAL "return tostring(struct.unpack('<d', struct.pack('<d', -1/0)))" 0
        EVAL "return struct.size('bhilTfdx')" 0
        EVAL "return struct.size('!bhilTfdx')" 0
        EVAL "return struct.size('!2bhilTfdx')" 0
        EVAL "return struct.size('!4 b i3 I5 c7 d')" 0
        EVAL "return struct.size('i32')" 0
        EVAL "return struct.size('i33')" 0
        EVAL "return struct.size('!2147483648')" 0
        EVAL "return struct.size('c2147483647')" 0
        EVAL "return {struct.unpack('bbb', 'abc', 2)}" 0
        EVAL "return {struct.unpack('b', 'abc', 4)}" 0
        EVAL "return {struct.unpack('', 'abc', 4)}" 0
        EVAL "return {struct.unpack('c', 'abc', 3)}" 0
    "##);
}

/// Redisson's rate limiter packs (permits, request id) as `Bc0I`; its map cache packs
/// (max idle, value) as `dLc0`.
#[test]
fn redisson_rate_limiter_encoding_matches_redis() {
    run(r##"
        EVAL "local v = struct.pack('Bc0I', string.len(ARGV[1]), ARGV[1], ARGV[2]) redis.call('zadd', KEYS[1], ARGV[3], v) return v" 1 {rl}:permits 7f3a9c01 5 1700000000000
        EVAL "local r = {} for _, v in ipairs(redis.call('zrangebyscore', KEYS[1], 0, ARGV[1])) do local rid, permits = struct.unpack('Bc0I', v) r[#r+1] = rid r[#r+1] = permits end return r" 1 {rl}:permits 1800000000000
        EVAL "local v = struct.pack('fI', 3.5, 42) return {struct.unpack('fI', v)}" 0
        ZRANGE {rl}:permits 0 -1 WITHSCORES
        EVAL "local v = struct.pack('dLc0', ARGV[1], string.len(ARGV[2]), ARGV[2]) redis.call('hset', KEYS[1], 'k', v) return v" 1 {mc} 60000 some-value
        EVAL "local t, len, val = struct.unpack('dLc0', redis.call('hget', KEYS[1], 'k')) return {t, len, val}" 1 {mc}
        EVAL "local t, val = struct.unpack('dLc0', redis.call('hget', KEYS[1], 'k')) return {t, val}" 1 {mc}
    "##);
}

#[test]
fn struct_is_a_protected_global() {
    run(r##"
        EVAL "return type(struct)" 0
        EVAL "return {type(struct.pack), type(struct.unpack), type(struct.size)}" 0
        EVAL "struct.pack = nil" 0
        EVAL "struct = nil" 0
        EVAL "rawset(struct, 'x', 1)" 0
        EVAL "return type(struct.nosuch)" 0
        EVAL "local ok, e = pcall(struct.size, 's') return {tostring(ok), e}" 0
        EVAL "local ok, e = pcall(function() return struct.size('s') end) return {tostring(ok), e}" 0
    "##);
}

/// Offsets, alignment and sizes at the edges (huge/negative offsets, i0, i9..i32 sign
/// extension, c0 after another item, `!` with huge alignments, many results).
#[test]
fn struct_edge_cases_match_redis() {
    run(r##"
        EVAL "return #{struct.unpack(string.rep('b', 7998), string.rep('a', 8000), 1)}" 0
        EVAL "return {struct.unpack('i0', '')}" 0
        EVAL "return struct.pack('i0', 5)" 0
        EVAL "return {struct.unpack('b', 'a', 2^53)}" 0
        EVAL "return {struct.unpack('b', 'a', -1)}" 0
        EVAL "return {struct.unpack('!8d', 'aaaaaaaaaaaaaaaa', 2)}" 0
        EVAL "return struct.pack('!1073741824bd', 1, 2)" 0
        EVAL "return struct.unpack('c2147483647', 'a')" 0
        EVAL "return struct.pack('c2147483647', 'a')" 0
        EVAL "return #struct.pack(string.rep('x', 100000))" 0
        EVAL "return {struct.unpack('<I32', string.rep('\255', 32))}" 0
        EVAL "return {struct.unpack('<i9', string.rep('\255', 9))}" 0
        EVAL "return {struct.unpack('<i12', '\1\0\0\0\0\0\0\0\0\0\0\128')}" 0
        EVAL "return {struct.unpack('c0', '')}" 0
        EVAL "return {struct.unpack('bc0', '\0')}" 0
        EVAL "return {struct.unpack('Bc0', '\5ab')}" 0
        EVAL "return {struct.unpack('sc0', '3\0abc')}" 0
        EVAL "return struct.size('!')" 0
        EVAL "return struct.size('!1i3')" 0
        EVAL "return struct.size('!4bi3')" 0
        EVAL "return struct.size('!4bI5')" 0
        EVAL "return {struct.unpack('!4bI5', struct.pack('!4bI5', 1, 2))}" 0
        PING
    "##);
}

/// Numbers returned to EVAL go through C's (long long) cast: NaN and out-of-range values
/// become i64::MIN.
#[test]
fn lua_number_to_integer_reply_matches_redis() {
    run(r##"
        EVAL "return 1e300" 0
        EVAL "return -1e300" 0
        EVAL "return 0/0" 0
        EVAL "return 2^63" 0
        EVAL "return -2^63" 0
        EVAL "return 2^62" 0
        EVAL "return {1e300}" 0
        EVAL "return -2^63-5000" 0
        EVAL "return 2^63-1024" 0
        EVAL "return 1/0" 0
        EVAL "return -1/0" 0
        EVAL "return {0/0, 3.9, -3.9}" 0
    "##);
}
