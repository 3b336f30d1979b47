//! The embedding API (`tumbler::embed`): start in a test, talk with a real client library,
//! move the clock directly, shut down cleanly.

use std::time::Duration;

use redis::AsyncCommands;
use tumbler::embed::TestServer;

#[tokio::test]
async fn async_start_on_the_current_runtime_with_the_redis_crate() {
    let server = TestServer::builder().start().await.unwrap();
    assert_ne!(server.port(), 0);
    let client = redis::Client::open(server.url()).unwrap();
    let mut con = client.get_multiplexed_async_connection().await.unwrap();
    let _: () = con.set("greeting", "hello").await.unwrap();
    let v: String = con.get("greeting").await.unwrap();
    assert_eq!(v, "hello");

    // A 30 s lease lapses when the test says so.
    let ok: Option<String> = redis::cmd("SET")
        .arg("lock")
        .arg("token")
        .arg("NX")
        .arg("PX")
        .arg(30_000)
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(ok.as_deref(), Some("OK"));
    server.time().advance(Duration::from_millis(30_001));
    let exists: bool = con.exists("lock").await.unwrap();
    assert!(!exists);

    server.shutdown().await;
    // Shutdown disconnects clients and stops accepting.
    let r: redis::RedisResult<String> = con.get("greeting").await;
    assert!(r.is_err(), "still served after shutdown: {r:?}");
}

#[tokio::test(flavor = "current_thread")]
async fn async_start_works_on_a_current_thread_runtime() {
    let server = TestServer::builder()
        .config("requirepass", "s3cret")
        .start()
        .await
        .unwrap();
    let client = redis::Client::open(format!("redis://:s3cret@{}/", server.addr())).unwrap();
    let mut con = client.get_multiplexed_async_connection().await.unwrap();
    let pong: String = redis::cmd("PING").query_async(&mut con).await.unwrap();
    assert_eq!(pong, "PONG");
    let time = server.time();
    time.freeze();
    let _: () = con.set_ex("k", "v", 1).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1100)).await;
    // Frozen: real time passed, the TTL did not run down.
    let ttl: i64 = con.pttl("k").await.unwrap();
    assert_eq!(ttl, 1000);
    time.advance(Duration::from_millis(1000));
    let v: Option<String> = con.get("k").await.unwrap();
    assert_eq!(v, None);
    server.shutdown().await;
}

#[test]
fn blocking_spawn_for_plain_tests_and_drop_cleans_up() {
    let server = TestServer::builder().spawn().unwrap();
    let addr = server.addr();
    let client = redis::Client::open(server.url()).unwrap();
    let mut con = client.get_connection().unwrap();
    redis::cmd("SET")
        .arg("lease")
        .arg("x")
        .arg("PX")
        .arg(60_000)
        .exec(&mut con)
        .unwrap();
    let now = server.time().now_ms();
    server.time().advance(Duration::from_secs(59));
    assert!(server.time().now_ms() >= now + 59_000);
    let pttl: i64 = redis::cmd("PTTL").arg("lease").query(&mut con).unwrap();
    assert!((0..=1000).contains(&pttl), "{pttl}");
    server.time().advance(Duration::from_secs(1));
    let n: i64 = redis::cmd("DBSIZE").query(&mut con).unwrap();
    assert_eq!(n, 0, "active expiry ran at advance");

    drop(server);
    // The listener is gone: connecting fails (or is closed at once).
    match std::net::TcpStream::connect(addr) {
        Err(_) => {}
        Ok(mut s) => {
            use std::io::{Read, Write};
            s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
            let _ = s.write_all(b"PING\r\n");
            let mut b = [0u8; 16];
            assert!(matches!(s.read(&mut b), Ok(0) | Err(_)));
        }
    }
    let r: redis::RedisResult<String> = redis::cmd("PING").query(&mut con);
    assert!(r.is_err());
}

#[test]
fn servers_are_independent_and_time_control_over_the_wire_is_opt_in() {
    let a = TestServer::builder().time_control(true).spawn().unwrap();
    let b = TestServer::builder().spawn().unwrap();
    assert_ne!(a.port(), b.port());
    let mut ca = redis::Client::open(a.url())
        .unwrap()
        .get_connection()
        .unwrap();
    let mut cb = redis::Client::open(b.url())
        .unwrap()
        .get_connection()
        .unwrap();
    let now: i64 = redis::cmd("TUMBLER.TIME")
        .arg("ADVANCE")
        .arg(1000)
        .query(&mut ca)
        .unwrap();
    assert!(now > 0);
    let err = redis::cmd("TUMBLER.TIME")
        .arg("NOW")
        .query::<i64>(&mut cb)
        .unwrap_err();
    assert!(err.to_string().contains("unknown command"), "{err}");
    // Moving one server's clock leaves the other alone.
    a.time().advance(Duration::from_secs(3600));
    assert!(a.time().now_ms() >= b.time().now_ms() + 3_600_000);
}

#[test]
fn bad_config_is_an_error_not_a_panic() {
    let err = TestServer::builder()
        .config("no-such-parameter", "1")
        .spawn()
        .err()
        .expect("unknown parameter must fail");
    assert!(err.to_string().contains("no-such-parameter"), "{err}");
    let err = TestServer::builder()
        .config("maxclients", "lots")
        .spawn()
        .err()
        .expect("bad value must fail");
    assert!(err.to_string().contains("maxclients"), "{err}");
}

#[test]
fn shutdown_command_stops_a_spawned_server() {
    let server = TestServer::builder().spawn().unwrap();
    let mut con = redis::Client::open(server.url())
        .unwrap()
        .get_connection()
        .unwrap();
    let _ = redis::cmd("SHUTDOWN").arg("NOSAVE").exec(&mut con);
    // Dropping after a SHUTDOWN must not hang.
    drop(server);
}
