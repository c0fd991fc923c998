package dev.parcrypt;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Files to public-key recipients from Java: identities made by {@link Parcrypt#keygen},
 * X25519 and post-quantum, several recipients (each identity opens the file alone), the
 * streams and the channel, the command line both ways, and misuse: a wrong identity, keys
 * in the wrong place, malformed keys, flags that exclude each other, keygen over a file.
 */
class RecipientsTest {
    static final int CHUNK = FilesTest.CHUNK;

    @TempDir
    Path folder;

    @BeforeAll
    static void findCli() {
        FilesTest.findCli();
    }

    static String run(String... arguments) throws Exception {
        return FilesTest.run(arguments);
    }

    /** The start of the secret key line of an identity's text, which no message may quote. */
    static String secretStart(NewIdentity identity) {
        char[] text = identity.identity().toChars();
        try {
            String all = new String(text);
            int at = all.indexOf("AGE-SECRET-KEY-");
            return all.substring(at, at + 24);
        } finally {
            Arrays.fill(text, '\0');
        }
    }

    @ParameterizedTest(name = "{0} bytes")
    @ValueSource(ints = {0, 1, 15, 16, 17, CHUNK + 1, 65535, 65536, 65537, (1 << 20) + 3})
    void each_identity_opens_a_file_to_several_recipients(int size) throws Exception {
        byte[] plaintext = Support.bytes(new SplittableRandom(size), size);
        Path plain = folder.resolve("plain");
        Files.write(plain, plaintext);
        for (boolean postQuantum : new boolean[] {false, true}) {
            try (NewIdentity alice = Parcrypt.keygen(postQuantum); NewIdentity bob = Parcrypt.keygen(postQuantum)) {
                String prefix = postQuantum ? "age1pq1" : "age1";
                assertTrue(alice.recipient().startsWith(prefix) && bob.recipient().startsWith(prefix));
                Path sealed = folder.resolve("sealed-" + postQuantum);
                assertEquals(size, Parcrypt.encryptFile(plain, sealed, Recipients.of(alice.recipient(), bob.recipient())));
                for (NewIdentity identity : List.of(alice, bob)) {
                    Path opened = folder.resolve("opened");
                    assertEquals(size, Parcrypt.decryptFile(sealed, opened, identity.identity(),
                            FileOptions.defaults().withOverwrite(true)));
                    assertArrayEquals(plaintext, Files.readAllBytes(opened), identity.recipient());
                }
            }
        }
    }

    @Test
    void streams_and_the_channel_take_recipients_and_identities() throws Exception {
        byte[] plaintext = Support.bytes(new SplittableRandom(7), 3 * CHUNK + 5);
        try (NewIdentity identity = Parcrypt.keygen(true)) {
            Path sealed = folder.resolve("streamed.pc");
            FileOptions options = FileOptions.defaults().withBackend(Backend.pool(2)).withContext(new byte[] {1, 2});
            try (OutputStream out = Parcrypt.newEncryptingStream(sealed, Recipients.of(identity.recipient()), options)) {
                for (int offset = 0; offset < plaintext.length; offset += 7_000) {
                    out.write(plaintext, offset, Math.min(7_000, plaintext.length - offset));
                }
            }
            try (InputStream in = Parcrypt.newDecryptingStream(sealed, identity.identity(), options)) {
                assertArrayEquals(plaintext, in.readAllBytes());
            }
            try (DecryptingChannel channel = Parcrypt.openDecryptingChannel(sealed, identity.identity(), options)) {
                assertEquals(plaintext.length, channel.size());
                ByteBuffer buffer = ByteBuffer.allocate(1000);
                channel.position(CHUNK - 10);
                while (buffer.hasRemaining() && channel.read(buffer) > 0) {
                    // read until full
                }
                assertArrayEquals(Arrays.copyOfRange(plaintext, CHUNK - 10, CHUNK + 990), buffer.array());
            }
            // The context is bound in: without it the file does not open.
            ParcryptFileException wrong = assertThrows(ParcryptFileException.class,
                    () -> Parcrypt.newDecryptingStream(sealed, identity.identity(), FileOptions.defaults()));
            assertEquals(Status.WRONG_KEY, wrong.status());
        }
    }

    @Test
    void the_command_line_and_java_open_each_others_files() throws Exception {
        byte[] plaintext = Support.bytes(new SplittableRandom(3), 100_000);
        Path plain = folder.resolve("plain");
        Files.write(plain, plaintext);

        // Java's identity file (0600) and file; `parcrypt decrypt -i` opens it.
        Path key = folder.resolve("java-key.txt");
        String recipient = Parcrypt.keygen(key, false);
        assertTrue(recipient.startsWith("age1") && !recipient.startsWith("age1pq1"), recipient);
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(key)));
        assertTrue(Files.readString(key).contains("# public key: " + recipient + "\n"));
        Path byJava = folder.resolve("java.pc");
        Parcrypt.encryptFile(plain, byJava, Recipients.fromFile(writeRecipients(recipient)));
        Path opened = folder.resolve("cli-opened");
        run("decrypt", "--quiet", "-i", key.toString(), byJava.toString(), "-o", opened.toString());
        assertArrayEquals(plaintext, Files.readAllBytes(opened));

        // The command line's post-quantum identity and file; Java opens it.
        Path cliKey = folder.resolve("cli-key.txt");
        String cliRecipient = run("keygen", "--pq", "-o", cliKey.toString()).strip();
        assertTrue(cliRecipient.startsWith("age1pq1"), cliRecipient);
        Path byCli = folder.resolve("cli.pc");
        run("encrypt", "--quiet", "-r", cliRecipient, plain.toString(), "-o", byCli.toString());
        Path javaOpened = folder.resolve("java-opened");
        try (Identities identities = Identities.fromFile(cliKey)) {
            assertEquals(plaintext.length, Parcrypt.decryptFile(byCli, javaOpened, identities));
        }
        assertArrayEquals(plaintext, Files.readAllBytes(javaOpened));
    }

    private Path writeRecipients(String recipient) throws IOException {
        Path file = folder.resolve("recipients.txt");
        Files.writeString(file, "# made by the test\n\n" + recipient + "\n");
        return file;
    }

    @Test
    void a_wrong_identity_fails_and_leaves_nothing() throws Exception {
        Path plain = folder.resolve("plain");
        Files.write(plain, new byte[] {1, 2, 3});
        try (NewIdentity owner = Parcrypt.keygen(false); NewIdentity other = Parcrypt.keygen(false)) {
            Path sealed = folder.resolve("sealed.pc");
            Parcrypt.encryptFile(plain, sealed, Recipients.of(owner.recipient()));
            Path opened = folder.resolve("opened");
            ParcryptFileException wrong = assertThrows(ParcryptFileException.class,
                    () -> Parcrypt.decryptFile(sealed, opened, other.identity()));
            assertEquals(Status.WRONG_KEY, wrong.status());
            assertFalse(wrong.getMessage().contains(secretStart(other)), wrong.getMessage());
            assertFalse(Files.exists(opened));
            assertThrows(ParcryptFileException.class,
                    () -> Parcrypt.openDecryptingChannel(sealed, other.identity(), FileOptions.defaults()));
            // A key for a file to recipients: an identity is needed.
            IllegalArgumentException key = assertThrows(IllegalArgumentException.class,
                    () -> Parcrypt.decryptFile(sealed, opened, new byte[16]));
            assertTrue(key.getMessage().contains("identity"), key.getMessage());
            assertFalse(Files.exists(opened));
        }
    }

    @Test
    void keys_in_the_wrong_place_are_refused_without_quoting_them() throws Exception {
        Path plain = folder.resolve("plain");
        Files.write(plain, new byte[] {4, 5, 6});
        Path sealed = folder.resolve("sealed.pc");
        try (NewIdentity identity = Parcrypt.keygen(false); NewIdentity hybrid = Parcrypt.keygen(true)) {
            String secret = secretStart(identity);
            // An identity file given as recipients.
            char[] text = identity.identity().toChars();
            IllegalArgumentException asRecipients = assertThrows(IllegalArgumentException.class,
                    () -> Parcrypt.encryptFile(plain, sealed, Recipients.parse(new String(text))));
            Arrays.fill(text, '\0');
            assertFalse(asRecipients.getMessage().contains(secret), asRecipients.getMessage());
            assertTrue(asRecipients.getMessage().contains("line"), asRecipients.getMessage());
            // A malformed recipient: the line is named, the key is not quoted.
            String recipient = identity.recipient();
            String malformed = recipient.substring(0, recipient.length() - 1)
                    + (recipient.endsWith("q") ? "p" : "q");
            IllegalArgumentException bad = assertThrows(IllegalArgumentException.class,
                    () -> Parcrypt.encryptFile(plain, sealed, Recipients.of(malformed)));
            assertTrue(bad.getMessage().contains("line 1"), bad.getMessage());
            assertFalse(bad.getMessage().contains(malformed.substring(0, 20)), bad.getMessage());
            assertFalse(bad.getMessage().contains("\n"));
            // X25519 and post-quantum recipients are not mixed.
            IllegalArgumentException mixed = assertThrows(IllegalArgumentException.class,
                    () -> Parcrypt.encryptFile(plain, sealed, Recipients.of(recipient, hybrid.recipient())));
            assertTrue(mixed.getMessage().contains("mixed"), mixed.getMessage());
            // Recipients with a passphrase: both kinds of secret at once.
            IllegalArgumentException both = assertThrows(IllegalArgumentException.class,
                    () -> Parcrypt.encryptFile(plain, sealed, Recipients.of(recipient),
                            FileOptions.defaults().withPassphrase(true)));
            assertTrue(both.getMessage().contains("one kind of secret"), both.getMessage());
            assertFalse(Files.exists(sealed));
            // Recipients given as identities.
            Parcrypt.encryptFile(plain, sealed, Recipients.of(recipient));
            Path opened = folder.resolve("opened");
            try (Identities notIdentities = Identities.of(recipient.getBytes(StandardCharsets.UTF_8))) {
                IllegalArgumentException asIdentities = assertThrows(IllegalArgumentException.class,
                        () -> Parcrypt.decryptFile(sealed, opened, notIdentities));
                assertTrue(asIdentities.getMessage().contains("line 1"), asIdentities.getMessage());
            }
            // Identities with a passphrase.
            assertThrows(IllegalArgumentException.class, () -> Parcrypt.decryptFile(sealed, opened,
                    identity.identity(), FileOptions.defaults().withPassphrase(true)));
            assertFalse(Files.exists(opened));
        }
        // Recipients.of takes keys, not a file's text.
        assertThrows(IllegalArgumentException.class, () -> Recipients.of("age1abc\nage1def"));
        assertThrows(IllegalArgumentException.class, () -> Recipients.of("# a comment"));
        assertThrows(IllegalArgumentException.class, () -> Recipients.of(List.of()));
    }

    @Test
    void identities_are_wiped_when_closed_and_never_printed() throws Exception {
        NewIdentity identity = Parcrypt.keygen(false);
        String secret = secretStart(identity);
        assertFalse(identity.toString().contains(secret), identity.toString());
        char[] text = identity.identity().toChars();
        Identities copy = Identities.of(text);
        Arrays.fill(text, '\0');
        identity.close();
        assertThrows(IllegalStateException.class, () -> identity.identity().toChars());
        Path plain = folder.resolve("plain");
        Files.write(plain, new byte[] {7});
        Path sealed = folder.resolve("sealed.pc");
        Parcrypt.encryptFile(plain, sealed, Recipients.of(identity.recipient()));
        Path opened = folder.resolve("opened");
        assertThrows(IllegalStateException.class, () -> Parcrypt.decryptFile(sealed, opened, identity.identity()));
        assertEquals(1, Parcrypt.decryptFile(sealed, opened, copy));
        copy.close();
    }

    @Test
    void keygen_never_replaces_a_file() throws Exception {
        Path key = folder.resolve("key.txt");
        String recipient = Parcrypt.keygen(key, true);
        assertTrue(recipient.startsWith("age1pq1"), recipient);
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(key)));
        byte[] before = Files.readAllBytes(key);
        ParcryptFileException exists = assertThrows(ParcryptFileException.class, () -> Parcrypt.keygen(key, false));
        assertEquals(Status.IO, exists.status());
        assertTrue(exists.getMessage().contains("already exists"), exists.getMessage());
        assertArrayEquals(before, Files.readAllBytes(key));
        ParcryptFileException missing = assertThrows(ParcryptFileException.class,
                () -> Parcrypt.keygen(folder.resolve("no/such/folder/key.txt"), false));
        assertEquals(Status.IO, missing.status());
        // The file written first is the one that opens what is encrypted to its recipient.
        Path plain = folder.resolve("plain");
        Files.write(plain, new byte[] {9, 9});
        Path sealed = folder.resolve("sealed.pc");
        Parcrypt.encryptFile(plain, sealed, Recipients.of(recipient));
        try (Identities identities = Identities.fromFile(key)) {
            assertEquals(2, Parcrypt.decryptFile(sealed, folder.resolve("opened"), identities));
        }
    }
}
