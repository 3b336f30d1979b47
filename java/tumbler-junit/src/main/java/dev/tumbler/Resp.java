package dev.tumbler;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import javax.net.ssl.SSLContext;

/**
 * A minimal RESP2 client for the control commands: one connection per call, replies as
 * String (simple and bulk strings, or byte[] for bulk strings when asked), Long, List or
 * null; an error reply throws.
 */
final class Resp {
    private Resp() {}

    static Object command(String host, int port, SSLContext tls, String user, String password,
                          int timeoutMs, String... args) {
        return pipeline(host, port, tls, user, password, timeoutMs, false, List.<String[]>of(args)).get(0);
    }

    /**
     * Sends the commands on one connection, all at once, and returns their replies in order
     * (bulk strings as byte[] when {@code raw}). The first error reply throws, after every
     * reply was read.
     */
    static List<Object> pipeline(String host, int port, SSLContext tls, String user, String password,
                                 int timeoutMs, boolean raw, List<String[]> commands) {
        String first = commands.isEmpty() ? "nothing" : commands.get(0)[0];
        try (Socket s = tls != null ? tls.getSocketFactory().createSocket() : new Socket()) {
            s.connect(new InetSocketAddress(host, port), timeoutMs);
            s.setSoTimeout(timeoutMs);
            s.setTcpNoDelay(true);
            OutputStream out = s.getOutputStream();
            InputStream in = new BufferedInputStream(s.getInputStream());
            if (password != null) {
                out.write(user != null ? encode("AUTH", user, password) : encode("AUTH", password));
                read(in, "AUTH", false);
            }
            ByteArrayOutputStream batch = new ByteArrayOutputStream();
            for (String[] c : commands) {
                batch.writeBytes(encode(c));
            }
            out.write(batch.toByteArray());
            out.flush();
            List<Object> replies = new ArrayList<>(commands.size());
            TumblerException error = null;
            for (String[] c : commands) {
                try {
                    replies.add(read(in, c[0], raw));
                } catch (TumblerException e) {
                    error = error == null ? e : error;
                    replies.add(e);
                }
            }
            if (error != null) {
                throw error;
            }
            return replies;
        } catch (IOException e) {
            throw new TumblerException("cannot send " + first + " to tumbler at " + host + ":" + port
                    + ": " + e, e);
        }
    }

    static byte[] encode(String... args) {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        b.writeBytes(("*" + args.length + "\r\n").getBytes(StandardCharsets.US_ASCII));
        for (String a : args) {
            byte[] v = a.getBytes(StandardCharsets.UTF_8);
            b.writeBytes(("$" + v.length + "\r\n").getBytes(StandardCharsets.US_ASCII));
            b.writeBytes(v);
            b.writeBytes(new byte[] {'\r', '\n'});
        }
        return b.toByteArray();
    }

    private static String line(InputStream in) throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        for (int c; ; ) {
            c = in.read();
            if (c < 0) {
                throw new EOFException("connection closed");
            }
            if (c == '\r') {
                in.read();
                return b.toString(StandardCharsets.UTF_8);
            }
            b.write(c);
        }
    }

    static Object read(InputStream in, String cmd) throws IOException {
        return read(in, cmd, false);
    }

    static Object read(InputStream in, String cmd, boolean raw) throws IOException {
        int type = in.read();
        if (type < 0) {
            throw new EOFException("connection closed before the reply to " + cmd);
        }
        String line = line(in);
        switch (type) {
            case '+':
                return line;
            case '-':
                throw new TumblerException(cmd + ": " + line);
            case ':':
                return Long.parseLong(line);
            case '$': {
                int n = Integer.parseInt(line);
                if (n < 0) {
                    return null;
                }
                byte[] body = in.readNBytes(n + 2);
                if (body.length < n + 2) {
                    throw new EOFException("short bulk reply to " + cmd);
                }
                return raw ? Arrays.copyOf(body, n) : new String(body, 0, n, StandardCharsets.UTF_8);
            }
            case '*': {
                int n = Integer.parseInt(line);
                if (n < 0) {
                    return null;
                }
                List<Object> items = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    items.add(read(in, cmd, raw));
                }
                return items;
            }
            default:
                throw new TumblerException("unexpected reply to " + cmd + ": " + (char) type + line);
        }
    }
}
