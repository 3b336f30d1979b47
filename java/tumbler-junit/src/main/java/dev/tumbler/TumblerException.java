package dev.tumbler;

/** The server could not be started or controlled, or answered a control command with an error. */
public class TumblerException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public TumblerException(String message) {
        super(message);
    }

    public TumblerException(String message, Throwable cause) {
        super(message, cause);
    }
}
