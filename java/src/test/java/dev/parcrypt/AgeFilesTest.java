package dev.parcrypt;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * age v1 files from Java ({@link FileFormat#AGE}): X25519 and post-quantum recipients, a
 * passphrase (scrypt), binary and armored, at sizes around age's 64 KiB chunk; decryption
 * recognising an age file by its header; the command line both ways; and misuse: a raw key,
 * a context, armor without age, the streams, a wrong identity or passphrase, a damaged file.
 */
class AgeFilesTest {
    static final byte[] BINARY_START = "age-encryption.org/v1\n".getBytes(StandardCharsets.US_ASCII);
    static final byte[] ARMOR_START = "-----BEGIN AGE ENCRYPTED FILE-----".getBytes(StandardCharsets.US_ASCII);
    static final byte[] PASSPHRASE = "correct horse battery staple".getBytes(StandardCharsets.UTF_8);

    @TempDir
    Path folder;

    @BeforeAll
    static void findCli() {
        FilesTest.findCli();
    }

    static FileOptions age(boolean armor) {
        return FileOptions.defaults().withFormat(FileFormat.AGE).withArmor(armor).withOverwrite(true);
    }

    static boolean startsWith(Path file, byte[] start) throws Exception {
        byte[] bytes = Files.readAllBytes(file);
        return bytes.length >= start.length && Arrays.equals(Arrays.copyOf(bytes, start.length), start);
    }

    /** A quiet {@code parcrypt COMMAND} with {@code format}'s arguments, then {@code rest}. */
    static String[] cli(String command, String[] format, String... rest) {
        java.util.List<String> arguments = new java.util.ArrayList<>(java.util.List.of(command, "--quiet"));
        arguments.addAll(java.util.List.of(format));
        arguments.addAll(java.util.List.of(rest));
        return arguments.toArray(String[]::new);
    }

    @ParameterizedTest(name = "{0} bytes")
    @ValueSource(ints = {0, 1, 65535, 65536, 65537, (1 << 20) + 3})
    void recipients_open_age_files_binary_and_armored(int size) throws Exception {
        byte[] plaintext = Support.bytes(new SplittableRandom(size), size);
        Path plain = folder.resolve("plain");
        Files.write(plain, plaintext);
        Path sealed = folder.resolve("sealed.age");
        Path opened = folder.resolve("opened");
        for (boolean postQuantum : new boolean[] {false, true}) {
            try (NewIdentity identity = Parcrypt.keygen(postQuantum)) {
                for (boolean armor : new boolean[] {false, true}) {
                    assertEquals(size, Parcrypt.encryptFile(plain, sealed, Recipients.of(identity.recipient()),
                            age(armor)));
                    assertTrue(startsWith(sealed, armor ? ARMOR_START : BINARY_START), "armor " + armor);
                    // No format given: the header says age.
                    assertEquals(size, Parcrypt.decryptFile(sealed, opened, identity.identity(),
                            FileOptions.defaults().withOverwrite(true)));
                    assertArrayEquals(plaintext, Files.readAllBytes(opened), postQuantum + " " + armor);
                }
            }
        }
    }

    @Test
    void a_passphrase_opens_its_age_file_and_no_other_does() throws Exception {
        Path plain = folder.resolve("plain");
        Path sealed = folder.resolve("sealed.age");
        Path opened = folder.resolve("opened");
        for (boolean armor : new boolean[] {false, true}) {
            byte[] plaintext = Support.bytes(new SplittableRandom(armor ? 1 : 2), armor ? 1 : 65537);
            Files.write(plain, plaintext);
            assertEquals(plaintext.length, Parcrypt.encryptFile(plain, sealed, PASSPHRASE,
                    age(armor).withPassphrase(true)));
            assertTrue(startsWith(sealed, armor ? ARMOR_START : BINARY_START));
            ParcryptFileException wrong = assertThrows(ParcryptFileException.class, () -> Parcrypt.decryptFile(
                    sealed, opened, "correct horse".getBytes(StandardCharsets.UTF_8),
                    FileOptions.defaults().withPassphrase(true)));
            assertEquals(Status.WRONG_KEY, wrong.status());
            assertFalse(Files.exists(opened));
            assertEquals(plaintext.length, Parcrypt.decryptFile(sealed, opened, PASSPHRASE,
                    FileOptions.defaults().withPassphrase(true)));
            assertArrayEquals(plaintext, Files.readAllBytes(opened));
            Files.delete(opened);
        }
        // An identity for a passphrase file: refused, naming what it needs.
        try (NewIdentity identity = Parcrypt.keygen(false)) {
            IllegalArgumentException kind = assertThrows(IllegalArgumentException.class,
                    () -> Parcrypt.decryptFile(sealed, opened, identity.identity()));
            assertTrue(kind.getMessage().contains("passphrase"), kind.getMessage());
        }
        assertFalse(Files.exists(opened));
    }

    @Test
    void the_command_line_and_java_open_each_others_age_files() throws Exception {
        byte[] plaintext = Support.bytes(new SplittableRandom(5), (1 << 20) + 3);
        Path plain = folder.resolve("plain");
        Files.write(plain, plaintext);
        Path passphraseFile = folder.resolve("passphrase.txt");
        Files.write(passphraseFile, PASSPHRASE);
        for (boolean armor : new boolean[] {false, true}) {
            // The command line's --format age, armored with -a.
            String[] format = armor ? new String[] {"--format", "age", "-a"} : new String[] {"--format", "age"};
            // The command line's age files (to a recipient of `parcrypt keygen`, to a
            // passphrase); Java opens them.
            Path cliKey = folder.resolve("cli-key-" + armor + ".txt");
            String cliRecipient = FilesTest.run("keygen", "-o", cliKey.toString()).strip();
            Path byCli = folder.resolve("cli-" + armor + ".age");
            FilesTest.run(cli("encrypt", format, "-r", cliRecipient, plain.toString(), "-o", byCli.toString()));
            assertTrue(startsWith(byCli, armor ? ARMOR_START : BINARY_START));
            Path javaOpened = folder.resolve("java-opened");
            try (Identities identities = Identities.fromFile(cliKey)) {
                assertEquals(plaintext.length, Parcrypt.decryptFile(byCli, javaOpened, identities,
                        FileOptions.defaults().withOverwrite(true)));
            }
            assertArrayEquals(plaintext, Files.readAllBytes(javaOpened));
            FilesTest.run(cli("encrypt", format, "-p", "--passphrase-file", passphraseFile.toString(),
                    plain.toString(), "-o", byCli.toString(), "--overwrite"));
            assertEquals(plaintext.length, Parcrypt.decryptFile(byCli, javaOpened, PASSPHRASE,
                    FileOptions.defaults().withPassphrase(true).withOverwrite(true)));
            assertArrayEquals(plaintext, Files.readAllBytes(javaOpened));

            // Java's age files (to the recipient of a post-quantum identity file Java wrote,
            // to a passphrase); `parcrypt decrypt` opens them.
            Path javaKey = folder.resolve("java-key-" + armor + ".txt");
            String recipient = Parcrypt.keygen(javaKey, true);
            Path byJava = folder.resolve("java-" + armor + ".age");
            Parcrypt.encryptFile(plain, byJava, Recipients.of(recipient), age(armor));
            Path cliOpened = folder.resolve("cli-opened");
            FilesTest.run("decrypt", "--quiet", "-i", javaKey.toString(), byJava.toString(), "-o",
                    cliOpened.toString(), "--overwrite");
            assertArrayEquals(plaintext, Files.readAllBytes(cliOpened));
            Parcrypt.encryptFile(plain, byJava, PASSPHRASE, age(armor).withPassphrase(true));
            FilesTest.run("decrypt", "--quiet", "--passphrase-file", passphraseFile.toString(), byJava.toString(),
                    "-o", cliOpened.toString(), "--overwrite");
            assertArrayEquals(plaintext, Files.readAllBytes(cliOpened));
        }
    }

    @Test
    void misuse_is_refused_and_leaves_nothing() throws Exception {
        byte[] plaintext = Support.bytes(new SplittableRandom(9), 200_000);
        Path plain = folder.resolve("plain");
        Files.write(plain, plaintext);
        Path never = folder.resolve("never");
        try (NewIdentity identity = Parcrypt.keygen(false); NewIdentity other = Parcrypt.keygen(false)) {
            Recipients recipients = Recipients.of(identity.recipient());
            IllegalArgumentException key = assertThrows(IllegalArgumentException.class,
                    () -> Parcrypt.encryptFile(plain, never, new byte[16], age(false)));
            assertTrue(key.getMessage().contains("raw key"), key.getMessage());
            IllegalArgumentException armor = assertThrows(IllegalArgumentException.class,
                    () -> Parcrypt.encryptFile(plain, never, recipients, FileOptions.defaults().withArmor(true)));
            assertTrue(armor.getMessage().contains("PARCRYPT_FILE_AGE"), armor.getMessage());
            IllegalArgumentException context = assertThrows(IllegalArgumentException.class,
                    () -> Parcrypt.encryptFile(plain, never, recipients, age(false).withContext(new byte[] {1})));
            assertTrue(context.getMessage().contains("context"), context.getMessage());
            IllegalArgumentException stream = assertThrows(IllegalArgumentException.class,
                    () -> Parcrypt.newEncryptingStream(never, recipients, age(false)));
            assertTrue(stream.getMessage().contains("parcrypt_encrypt_file"), stream.getMessage());
            assertThrows(IllegalArgumentException.class,
                    () -> Parcrypt.encryptFile(plain, never, PASSPHRASE, age(false).withPassphrase(true)
                            .withBackend(Backend.seq()).withContext(new byte[] {2})));
            assertFalse(Files.exists(never));

            Path sealed = folder.resolve("sealed.age");
            Parcrypt.encryptFile(plain, sealed, recipients, age(false).withBackend(Backend.seq()));
            // A seekable channel reads parcrypt files, not age files.
            IllegalArgumentException channel = assertThrows(IllegalArgumentException.class,
                    () -> Parcrypt.openDecryptingChannel(sealed, identity.identity(), FileOptions.defaults()));
            assertTrue(channel.getMessage().contains("parcrypt_decrypt_file"), channel.getMessage());
            // A key for an age file; a context with it.
            assertThrows(IllegalArgumentException.class, () -> Parcrypt.decryptFile(sealed, never, new byte[16]));
            assertThrows(IllegalArgumentException.class, () -> Parcrypt.decryptFile(sealed, never,
                    identity.identity(), FileOptions.defaults().withContext(new byte[] {1})));
            // A wrong identity: found from the header, nothing written, the key not quoted.
            ParcryptFileException wrong = assertThrows(ParcryptFileException.class,
                    () -> Parcrypt.decryptFile(sealed, never, other.identity()));
            assertEquals(Status.WRONG_KEY, wrong.status());
            assertFalse(wrong.getMessage().contains(RecipientsTest.secretStart(other)), wrong.getMessage());
            assertFalse(Files.exists(never));
            // A damaged byte in a later chunk, and a cut file: authentication fails, nothing
            // is written.
            byte[] file = Files.readAllBytes(sealed);
            byte[] damaged = file.clone();
            damaged[damaged.length - 100_000] ^= 0x10;
            Path damagedPath = folder.resolve("damaged.age");
            for (byte[] bad : new byte[][] {damaged, Arrays.copyOf(file, file.length - 17)}) {
                Files.write(damagedPath, bad);
                ParcryptFileException failed = assertThrows(ParcryptFileException.class,
                        () -> Parcrypt.decryptFile(damagedPath, never, identity.identity()));
                assertEquals(Status.AUTHENTICATION_FAILED, failed.status());
                assertFalse(Files.exists(never));
            }
            assertEquals(plaintext.length, Parcrypt.decryptFile(sealed, never, identity.identity(),
                    FileOptions.defaults().withFormat(FileFormat.AGE)));
            assertArrayEquals(plaintext, Files.readAllBytes(never));
        }
    }

    @Test
    void options_carry_the_format_and_armor() {
        FileOptions options = FileOptions.defaults();
        assertEquals(FileFormat.PARCRYPT, options.format());
        assertFalse(options.armor());
        FileOptions age = options.withFormat(FileFormat.AGE).withArmor(true);
        assertEquals(FileFormat.AGE, age.format());
        assertTrue(age.armor());
        assertEquals(age, FileOptions.defaults().withArmor(true).withFormat(FileFormat.AGE));
        assertFalse(age.equals(options.withFormat(FileFormat.AGE)));
        assertTrue(age.toString().contains("format=AGE"), age.toString());
        assertThrows(NullPointerException.class, () -> options.withFormat(null));
    }
}
