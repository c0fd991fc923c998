package dev.parcrypt;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 31 finding 7: the library's warnings (a 1-byte passphrase) were dropped by the
 * binding; they reach the System.Logger "dev.parcrypt" (java.util.logging by default).
 */
class WarningsTest {
    @TempDir
    Path folder;

    /** The warnings logged while a test runs, with the logger's own level and handlers kept. */
    private final List<LogRecord> logged = new CopyOnWriteArrayList<>();
    private final Logger logger = Logger.getLogger("dev.parcrypt");
    private final Handler collector = new Handler() {
        @Override
        public void publish(LogRecord record) {
            logged.add(record);
        }

        @Override
        public void flush() {}

        @Override
        public void close() {}
    };

    @BeforeEach
    void listen() {
        logger.addHandler(collector);
    }

    @AfterEach
    void stopListening() {
        logger.removeHandler(collector);
    }

    private List<String> warnings() {
        return logged.stream()
                .filter(record -> record.getLevel() == Level.WARNING)
                .map(LogRecord::getMessage)
                .toList();
    }

    @Test
    void an_identity_file_others_can_read_is_logged_and_read() throws Exception {
        Path key = folder.resolve("key.txt");
        String recipient = Parcrypt.keygen(key, false);
        Path plain = folder.resolve("plain");
        Files.write(plain, "attack at dawn".getBytes(StandardCharsets.UTF_8));
        Parcrypt.encryptFile(plain, folder.resolve("sealed"), Recipients.of(recipient));
        try (Identities identities = Identities.fromFile(key)) {
            assertEquals(List.of(), warnings());
            assertEquals("Identities[redacted]", identities.toString());
        }
        Files.setPosixFilePermissions(key, java.nio.file.attribute.PosixFilePermissions.fromString("rw-r--r--"));
        try (Identities identities = Identities.fromFile(key)) {
            assertEquals(1, warnings().size(), () -> "warnings: " + warnings());
            assertTrue(warnings().get(0).contains("chmod 600"), warnings().get(0));
            Parcrypt.decryptFile(folder.resolve("sealed"), folder.resolve("opened"), identities);
        }
        assertEquals("attack at dawn", Files.readString(folder.resolve("opened")));
        // A key that does not parse is refused when the file is read, without quoting it.
        Path bad = folder.resolve("bad.txt");
        Files.writeString(bad, "AGE-SECRET-KEY-1NOTAKEYATALL\n");
        IllegalArgumentException refused = org.junit.jupiter.api.Assertions.assertThrows(
                IllegalArgumentException.class, () -> Identities.fromFile(bad));
        assertTrue(!refused.getMessage().contains("NOTAKEY"), refused.getMessage());
    }

    @Test
    void a_short_passphrase_is_logged_as_a_warning() throws Exception {
        Path plain = folder.resolve("plain");
        Files.write(plain, "attack at dawn".getBytes(StandardCharsets.UTF_8));
        FileOptions passphrase = FileOptions.defaults().withPassphrase(true);

        Parcrypt.encryptFile(plain, folder.resolve("whole"), new byte[] {'x'}, passphrase);
        assertEquals(1, warnings().size(), () -> "warnings: " + warnings());
        assertTrue(warnings().get(0).contains("passphrase is only 1 bytes"), warnings().get(0));

        try (OutputStream out = Parcrypt.newEncryptingStream(folder.resolve("streamed"), "abc".getBytes(StandardCharsets.UTF_8),
                passphrase)) {
            out.write(1);
        }
        assertEquals(2, warnings().size(), () -> "warnings: " + warnings());
        assertTrue(warnings().get(1).contains("passphrase is only 3 bytes"), warnings().get(1));
    }

    @Test
    void keys_and_long_passphrases_warn_about_nothing() throws Exception {
        Path plain = folder.resolve("plain");
        Files.write(plain, new byte[] {1, 2, 3});
        Parcrypt.encryptFile(plain, folder.resolve("keyed"), new byte[16]);
        Parcrypt.encryptFile(plain, folder.resolve("long"), "eight by".getBytes(StandardCharsets.UTF_8),
                FileOptions.defaults().withPassphrase(true));
        assertEquals(List.of(), warnings());
    }
}
