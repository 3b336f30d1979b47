package io.tumbler.compat;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/** A minimal RESP2 connection for the harness's own admin commands (readiness, time control, ACL). */
public final class Resp implements AutoCloseable {
    /** An error reply. */
    public static final class Error extends RuntimeException {
        public Error(String msg) { super(msg); }
    }

    private final Socket socket;
    private final InputStream in;
    private final OutputStream out;

    public Resp(int port, int timeoutMs) throws IOException {
        socket = new Socket();
        socket.connect(new InetSocketAddress("127.0.0.1", port), timeoutMs);
        socket.setSoTimeout(timeoutMs);
        in = new BufferedInputStream(socket.getInputStream());
        out = socket.getOutputStream();
    }

    /** One command on a fresh connection. */
    public static Object once(int port, Object... args) {
        try (Resp r = new Resp(port, 5000)) {
            return r.call(args);
        } catch (IOException e) {
            throw new RuntimeException("port " + port + ": " + e, e);
        }
    }

    public Object call(Object... args) throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        b.writeBytes(("*" + args.length + "\r\n").getBytes(StandardCharsets.UTF_8));
        for (Object a : args) {
            byte[] v = String.valueOf(a).getBytes(StandardCharsets.UTF_8);
            b.writeBytes(("$" + v.length + "\r\n").getBytes(StandardCharsets.UTF_8));
            b.writeBytes(v);
            b.writeBytes("\r\n".getBytes(StandardCharsets.UTF_8));
        }
        out.write(b.toByteArray());
        out.flush();
        return read();
    }

    private String line() throws IOException {
        StringBuilder sb = new StringBuilder();
        int c;
        while ((c = in.read()) != -1) {
            if (c == '\r') { in.read(); return sb.toString(); }
            sb.append((char) c);
        }
        throw new IOException("connection closed");
    }

    private Object read() throws IOException {
        String l = line();
        char t = l.charAt(0);
        String rest = l.substring(1);
        switch (t) {
            case '+': return rest;
            case '-': throw new Error(rest);
            case ':': return Long.parseLong(rest);
            case '$': {
                int n = Integer.parseInt(rest);
                if (n < 0) return null;
                byte[] v = in.readNBytes(n);
                in.readNBytes(2);
                return new String(v, StandardCharsets.UTF_8);
            }
            case '*': {
                int n = Integer.parseInt(rest);
                if (n < 0) return null;
                List<Object> list = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    try { list.add(read()); } catch (Error e) { list.add(e); }
                }
                return list;
            }
            default: throw new IOException("unexpected reply type: " + l);
        }
    }

    @Override public void close() throws IOException { socket.close(); }
}
