package dev.tumbler;

import java.util.Map;

/**
 * The lock-order checker found order inversions or deadlocks. An {@link AssertionError}, so a
 * test framework reports it as a failed assertion; {@link #report()} is the whole document.
 */
public class LockOrderError extends AssertionError {
    private static final long serialVersionUID = 1L;
    private final transient Map<String, Object> report;

    public LockOrderError(String message, Map<String, Object> report) {
        super(message);
        this.report = report;
    }

    /** The parsed {@code TUMBLER.LOCKDEP REPORT} document (of the first node that had findings). */
    public Map<String, Object> report() {
        return report;
    }
}
