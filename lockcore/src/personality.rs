//! Which server Tumbler is: a Redis or Valkey release, chosen with the `personality`
//! directive (docs/personalities.md). A personality sets what INFO and HELLO announce,
//! which commands and subcommands exist, their arity, and the replies that changed
//! between versions. Handlers ask with [`Personality::has`] and a [`Since`].

/// The server a personality imitates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    Redis,
    Valkey,
}

/// A release as `major * 100 + minor` (7.2 is 702).
pub type Level = u16;

/// The level that no release reaches: "not in this flavor".
pub const NEVER: Level = Level::MAX;

/// From which release of each flavor something exists. Valkey forked from Redis 7.2.4, so
/// whatever Redis had by 7.2 every Valkey personality has: `Since::redis(702)` is
/// `{ redis: 702, valkey: 0 }`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Since {
    pub redis: Level,
    pub valkey: Level,
}

impl Since {
    /// In every personality (Redis 7.0 and earlier).
    pub const ALWAYS: Since = Since {
        redis: 0,
        valkey: 0,
    };
    /// Tumbler's own commands: in every personality.
    pub const TUMBLER: Since = Since::ALWAYS;

    /// Redis `level` or later, and every Valkey when `level` is 7.2 or earlier; from
    /// Redis 7.4 on, Redis only.
    pub const fn redis(level: Level) -> Since {
        Since {
            redis: level,
            valkey: if level <= 702 { 0 } else { NEVER },
        }
    }

    /// Valkey `level` or later only.
    pub const fn valkey(level: Level) -> Since {
        Since {
            redis: NEVER,
            valkey: level,
        }
    }

    /// Redis `redis` or later, Valkey `valkey` or later.
    pub const fn both(redis: Level, valkey: Level) -> Since {
        Since { redis, valkey }
    }
}

/// One server release Tumbler can be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Personality {
    /// The `personality` directive's value: "redis-8.0".
    pub name: &'static str,
    pub flavor: Flavor,
    /// The flavor's own release as `major * 100 + minor`.
    pub level: Level,
    /// The full version announced: HELLO's `version`, INFO's `redis_version` (Redis) or
    /// `valkey_version` (Valkey).
    pub version: &'static str,
}

impl Personality {
    /// Redis 7.2: what Tumbler announced before personalities existed, and the last release
    /// Redis and Valkey share (Valkey forked from 7.2.4), so code tested against it runs on
    /// either (docs/personalities.md).
    pub const DEFAULT: Personality = ALL[1];

    /// The personality named `name` (case-insensitive).
    pub fn parse(name: &str) -> Option<Personality> {
        ALL.iter()
            .find(|p| p.name.eq_ignore_ascii_case(name))
            .copied()
    }

    /// Whether something available `since` exists in this personality.
    pub fn has(&self, since: Since) -> bool {
        match self.flavor {
            Flavor::Redis => self.level >= since.redis,
            Flavor::Valkey => self.level >= since.valkey,
        }
    }

    pub fn is_valkey(&self) -> bool {
        self.flavor == Flavor::Valkey
    }

    /// INFO's `redis_version`: Valkey keeps announcing 7.2.4 there for old clients.
    pub fn redis_version(&self) -> &'static str {
        match self.flavor {
            Flavor::Redis => self.version,
            Flavor::Valkey => "7.2.4",
        }
    }

    /// HELLO's `server` and INFO's `server_name`.
    pub fn server_name(&self) -> &'static str {
        match self.flavor {
            Flavor::Redis => "redis",
            Flavor::Valkey => "valkey",
        }
    }

    /// How doubles are printed in replies and Lua numbers passed to commands: `%.17g` up to
    /// Redis 7.0, the shortest round-tripping text from 7.2 (and in every Valkey), GEO
    /// coordinates too from Redis 8.0.
    pub fn doubles(&self) -> crate::num::DoubleFmt {
        if self.has(Since::redis(800)) {
            crate::num::DoubleFmt::ShortestGeo
        } else if self.has(Since::redis(702)) {
            crate::num::DoubleFmt::Shortest
        } else {
            crate::num::DoubleFmt::Printf17g
        }
    }

    /// One cell of a table generated from the reference servers (COMMAND's tips and key
    /// specs): Redis 8's text, Valkey's and Redis 7.0's, where `=` means "as Redis 8".
    pub fn pick(
        &self,
        redis: &'static str,
        valkey: &'static str,
        redis70: &'static str,
    ) -> &'static str {
        let own = if self.is_valkey() {
            valkey
        } else if !self.has(Since::redis(702)) {
            redis70
        } else {
            "="
        };
        if own == "=" {
            redis
        } else {
            own
        }
    }

    /// What HELLO lists under `modules`, as (name, path): Redis 8 builds vector sets in as
    /// a module, Valkey 9 its Lua engine.
    pub fn modules(&self) -> &'static [(&'static str, &'static str)] {
        match self.flavor {
            Flavor::Redis if self.level >= 800 => &[("vectorset", "")],
            Flavor::Valkey if self.level >= 900 => &[("lua", "lua")],
            _ => &[],
        }
    }

    /// The RDB version the server writes in DUMP payloads (their footer), FUNCTION DUMP and
    /// RDB files, and the newest it accepts from RESTORE: Redis 7.0 10, 7.2 11, 7.4 and
    /// 8.0 12; Valkey 8.1 11, Valkey 9 80 (its files start `VALKEY080`).
    pub fn rdb_version(&self) -> u16 {
        match (self.flavor, self.level) {
            (Flavor::Redis, ..=701) => 10,
            (Flavor::Redis, 702..=703) => 11,
            (Flavor::Redis, _) => 12,
            (Flavor::Valkey, ..=899) => 11,
            (Flavor::Valkey, _) => 80,
        }
    }

    /// The version as Lua's `redis.REDIS_VERSION_NUM` and the RDB AUX field see it:
    /// `0x00MMmmpp`.
    pub fn version_num(&self) -> u32 {
        let mut parts = self
            .redis_version()
            .split('.')
            .map(|s| s.parse::<u32>().unwrap_or(0));
        let (a, b, c) = (
            parts.next().unwrap_or(0),
            parts.next().unwrap_or(0),
            parts.next().unwrap_or(0),
        );
        (a << 16) | (b << 8) | c
    }
}

/// Every personality, oldest first per flavor. The first Redis one is the reference Tumbler's
/// differential tests ran against before there were personalities.
pub const ALL: &[Personality] = &[
    Personality {
        name: "redis-7.0",
        flavor: Flavor::Redis,
        level: 700,
        version: "7.0.15",
    },
    Personality {
        name: "redis-7.2",
        flavor: Flavor::Redis,
        level: 702,
        version: "7.2.4",
    },
    Personality {
        name: "redis-7.4",
        flavor: Flavor::Redis,
        level: 704,
        version: "7.4.2",
    },
    Personality {
        name: "redis-8.0",
        flavor: Flavor::Redis,
        level: 800,
        version: "8.0.2",
    },
    Personality {
        name: "valkey-8.1",
        flavor: Flavor::Valkey,
        level: 801,
        version: "8.1.1",
    },
    Personality {
        name: "valkey-9.0",
        flavor: Flavor::Valkey,
        level: 900,
        version: "9.0.0",
    },
    Personality {
        name: "valkey-9.1",
        flavor: Flavor::Valkey,
        level: 901,
        version: "9.1.2",
    },
];

impl Default for Personality {
    fn default() -> Self {
        Personality::DEFAULT
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_redis_7_2_and_names_parse() {
        assert_eq!(Personality::DEFAULT.name, "redis-7.2");
        for p in ALL {
            assert_eq!(Personality::parse(&p.name.to_uppercase()), Some(*p));
        }
        assert_eq!(Personality::parse("redis-6.2"), None);
    }

    #[test]
    fn since_follows_the_fork() {
        let r70 = Personality::parse("redis-7.0").unwrap();
        let r72 = Personality::parse("redis-7.2").unwrap();
        let r80 = Personality::parse("redis-8.0").unwrap();
        let v81 = Personality::parse("valkey-8.1").unwrap();
        let v90 = Personality::parse("valkey-9.0").unwrap();
        assert!(!r70.has(Since::redis(702)) && r72.has(Since::redis(702)));
        assert!(v81.has(Since::redis(702)), "valkey has all of 7.2");
        assert!(r80.has(Since::redis(704)) && !v90.has(Since::redis(704)));
        assert!(v90.has(Since::both(704, 900)) && !v81.has(Since::both(704, 900)));
        assert!(!r80.has(Since::valkey(801)) && v81.has(Since::valkey(801)));
        assert_eq!(v90.redis_version(), "7.2.4");
        assert_eq!(r80.version_num(), 0x080002);
    }

    #[test]
    fn rdb_versions() {
        let v: Vec<u16> = ALL.iter().map(|p| p.rdb_version()).collect();
        assert_eq!(v, [10, 11, 12, 12, 11, 80, 80]);
    }
}
