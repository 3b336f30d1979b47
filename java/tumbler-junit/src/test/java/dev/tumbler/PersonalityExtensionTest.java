package dev.tumbler;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tumbler.junit.Tumbler;
import org.junit.jupiter.api.Test;

/** {@code @Tumbler(personality = ...)} starts the server as that release. */
@Tumbler(personality = "valkey-9.1")
class PersonalityExtensionTest {
    @Test
    void theServerIsTheChosenRelease(TumblerServer srv) {
        String info = (String) srv.command("INFO", "server");
        assertTrue(info.contains("\r\nserver_name:valkey\r\n"), info);
        assertTrue(info.contains("\r\nvalkey_version:9.1.2\r\n"), info);
    }
}
