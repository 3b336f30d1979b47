package io.tumbler.compat;

import java.util.ArrayList;
import java.util.List;

/** One server of a client test: tumbler (with time control) or redis-server. Not AutoCloseable (JUnit would close it). */
public final class Side {
    public final String name;
    public final boolean tumbler;
    public final ServerProc proc;

    private Side(String name, boolean tumbler, ServerProc proc) {
        this.name = name;
        this.tumbler = tumbler;
        this.proc = proc;
    }

    public int port() { return proc.port(); }

    /** Lets a lease of `ms` lapse: tumbler's clock moves; redis-server waits that long in real time (keep it short). */
    public void lapse(long ms) {
        if (tumbler) Resp.once(port(), "TUMBLER.TIME", "ADVANCE", ms + 1);
        else Servers.sleep(ms + 150);
    }

    public static List<Side> single() {
        List<Side> out = new ArrayList<>();
        out.add(new Side("tumbler", true, Servers.tumbler(1, "--enable-time-control", "yes")));
        try {
            out.add(new Side("redis-server", false, Servers.redis()));
        } catch (RuntimeException e) {
            out.forEach(Side::stop);
            throw e;
        }
        return out;
    }

    public void stop() { proc.close(); }

    @Override public String toString() { return name; }
}
