-- KEYS[1]: the caller's window counter; ARGV[1]: window ms; ARGV[2]: the limit
local n = redis.call('INCR', KEYS[1])
if n == 1 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
end
if n > tonumber(ARGV[2]) then
  return 0
end
return 1
