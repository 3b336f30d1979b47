package dev.tumbler;

/**
 * A JVM that starts a server, prints its pid, then either waits to be killed ("wait") or
 * returns from main without closing it ("exit").
 */
public final class OrphanChild {
    private OrphanChild() {}

    public static void main(String[] args) throws Exception {
        TumblerServer srv = TumblerServer.builder().start();
        System.out.println("server-pid=" + srv.pid());
        System.out.flush();
        if (args.length > 0 && args[0].equals("exit")) {
            return;
        }
        Thread.sleep(60_000);
    }
}
