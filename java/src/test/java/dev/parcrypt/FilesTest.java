package dev.parcrypt;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.channels.NonWritableChannelException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import javax.crypto.AEADBadTagException;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Files, byte for byte with the command line: what Java encrypts `parcrypt decrypt` opens
 * and the reverse, through whole-file calls, streams and the seekable channel; wrong keys,
 * damaged and truncated files fail and leave nothing behind.
 */
class FilesTest {
    static final int CHUNK = 16 << 10;
    static Path cli;

    @TempDir
    Path folder;

    @BeforeAll
    static void findCli() {
        String path = System.getProperty("parcrypt.cli", "../target/release/parcrypt");
        cli = Path.of(path).toAbsolutePath();
        assertTrue(Files.isExecutable(cli), "the parcrypt command line is needed for these tests: " + cli
                + " (cargo build --release -p parcrypt-cli, or -Dparcrypt.cli=PATH)");
    }

    static String run(String... arguments) throws Exception {
        List<String> command = new java.util.ArrayList<>();
        command.add(cli.toString());
        command.addAll(List.of(arguments));
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        int status = process.waitFor();
        if (status != 0) {
            throw new IOException("parcrypt " + String.join(" ", arguments) + " exited " + status + ": " + output);
        }
        return output;
    }

    static byte[] key(int length) {
        byte[] key = new byte[length];
        for (int i = 0; i < length; i++) {
            key[i] = (byte) (i * 13 + 1);
        }
        return key;
    }

    @ParameterizedTest(name = "{0} bytes")
    @ValueSource(ints = {0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 5, (1 << 20) + 7})
    void java_and_the_command_line_open_each_others_files(int size) throws Exception {
        byte[] plaintext = Support.bytes(new SplittableRandom(size), size);
        for (int keyLength : new int[] {16, 32}) {
            byte[] key = key(keyLength);
            String hex = Support.HEX.formatHex(key);
            Path plain = folder.resolve("plain-" + keyLength);
            Files.write(plain, plaintext);

            // Java writes (a whole-file call and a stream), the command line reads.
            Path byCall = folder.resolve("call-" + keyLength + ".pc");
            assertEquals(size, Parcrypt.encryptFile(plain, byCall, key));
            Path byStream = folder.resolve("stream-" + keyLength + ".pc");
            try (OutputStream out = Parcrypt.newEncryptingStream(byStream, key)) {
                for (int offset = 0; offset < size; offset += 7_000) {
                    out.write(plaintext, offset, Math.min(7_000, size - offset));
                }
            }
            for (Path sealed : new Path[] {byCall, byStream}) {
                Path opened = folder.resolve("cli-opened-" + keyLength);
                run("decrypt", "--key", hex, sealed.toString(), "-o", opened.toString());
                assertArrayEquals(plaintext, Files.readAllBytes(opened), sealed.getFileName().toString());
                Files.delete(opened);
            }

            // The command line writes, Java reads (a whole-file call, a stream, the channel).
            Path byCli = folder.resolve("cli-" + keyLength + ".pc");
            run("encrypt", "--key", hex, plain.toString(), "-o", byCli.toString());
            Path opened = folder.resolve("java-opened-" + keyLength);
            assertEquals(size, Parcrypt.decryptFile(byCli, opened, key));
            assertArrayEquals(plaintext, Files.readAllBytes(opened));
            try (InputStream in = Parcrypt.newDecryptingStream(byCli, key)) {
                assertArrayEquals(plaintext, readInPieces(in));
            }
            try (DecryptingChannel channel = Parcrypt.openDecryptingChannel(byCli, key)) {
                assertEquals(size, channel.size());
                SplittableRandom random = new SplittableRandom(size + keyLength);
                for (int read = 0; read < 20 && size > 0; read++) {
                    int start = random.nextInt(size);
                    int length = Math.min(size - start, 1 + random.nextInt(3 * CHUNK));
                    ByteBuffer buffer = read % 2 == 0 ? ByteBuffer.allocate(length) : ByteBuffer.allocateDirect(length);
                    channel.position(start);
                    while (buffer.hasRemaining() && channel.read(buffer) > 0) {
                        // read until full
                    }
                    assertEquals(start + length, channel.position());
                    byte[] got = new byte[length];
                    buffer.flip().get(got);
                    assertArrayEquals(Arrays.copyOfRange(plaintext, start, start + length), got,
                            "channel read at " + start);
                }
                channel.position(size);
                assertEquals(-1, channel.read(ByteBuffer.allocate(4)));
                assertThrows(NonWritableChannelException.class, () -> channel.write(ByteBuffer.allocate(1)));
            }
        }
    }

    static byte[] readInPieces(InputStream in) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        byte[] piece = new byte[5_003];
        int first = in.read();
        if (first < 0) {
            return out.toByteArray();
        }
        out.write(first);
        for (int got; (got = in.read(piece)) > 0; ) {
            out.write(piece, 0, got);
        }
        return out.toByteArray();
    }

    @Test
    void wrong_key_damage_and_truncation_fail_and_leave_nothing() throws Exception {
        byte[] plaintext = Support.bytes(new SplittableRandom(3), 5 * CHUNK + 100);
        Path plain = folder.resolve("plain");
        Files.write(plain, plaintext);
        byte[] key = key(16);
        Path sealed = folder.resolve("sealed.pc");
        Parcrypt.encryptFile(plain, sealed, key);
        Path out = folder.resolve("out");

        byte[] otherKey = key.clone();
        otherKey[0] ^= 1;
        ParcryptFileException wrong = assertThrows(ParcryptFileException.class,
                () -> Parcrypt.decryptFile(sealed, out, otherKey));
        assertEquals(Status.WRONG_KEY, wrong.status());
        assertFalse(wrong.getMessage().contains("\n"));
        assertFalse(Files.exists(out), "nothing left behind");
        assertThrows(ParcryptFileException.class, () -> Parcrypt.newDecryptingStream(sealed, otherKey));
        assertThrows(ParcryptFileException.class, () -> Parcrypt.openDecryptingChannel(sealed, otherKey));
        IllegalArgumentException suite = assertThrows(IllegalArgumentException.class,
                () -> Parcrypt.decryptFile(sealed, out, key(32)), "an AES-256 key for an AES-128 file");
        assertTrue(suite.getMessage().contains("key"), suite.getMessage());
        assertFalse(Files.exists(out), "nothing left behind");

        byte[] bytes = Files.readAllBytes(sealed);
        Path damaged = folder.resolve("damaged.pc");
        byte[] bad = bytes.clone();
        bad[bad.length / 2] ^= 1;
        Files.write(damaged, bad);
        ParcryptFileException chunk = assertThrows(ParcryptFileException.class,
                () -> Parcrypt.decryptFile(damaged, out, key));
        assertEquals(Status.AUTHENTICATION_FAILED, chunk.status());
        assertInstanceOf(AEADBadTagException.class, chunk.getCause());
        assertFalse(Files.exists(out), "nothing left behind");
        try (InputStream in = Parcrypt.newDecryptingStream(damaged, key)) {
            ByteArrayOutputStream released = new ByteArrayOutputStream();
            IOException failed = assertThrows(IOException.class, () -> {
                byte[] piece = new byte[1000];
                for (int got; (got = in.read(piece)) > 0; ) {
                    released.write(piece, 0, got);
                }
            });
            assertInstanceOf(AEADBadTagException.class, failed.getCause());
            byte[] before = released.toByteArray();
            assertTrue(before.length < bad.length / 2, "only bytes before the damage: " + before.length);
            assertArrayEquals(Arrays.copyOf(plaintext, before.length), before);
        }

        Path truncated = folder.resolve("truncated.pc");
        Files.write(truncated, Arrays.copyOf(bytes, bytes.length - CHUNK));
        assertThrows(ParcryptFileException.class, () -> Parcrypt.decryptFile(truncated, out, key));
        assertFalse(Files.exists(out));
        try (DecryptingChannel channel = Parcrypt.openDecryptingChannel(truncated, key)) {
            assertThrows(ParcryptFileException.class, channel::size, "a cut file fails rather than looking shorter");
        }

        Path foreign = folder.resolve("foreign");
        Files.writeString(foreign, "not a parcrypt file at all, just some text that is long enough");
        ParcryptFileException format = assertThrows(ParcryptFileException.class,
                () -> Parcrypt.decryptFile(foreign, out, key));
        assertEquals(Status.BAD_FORMAT, format.status());

        ParcryptFileException exists = assertThrows(ParcryptFileException.class,
                () -> Parcrypt.encryptFile(plain, sealed, key));
        assertEquals(Status.IO, exists.status());
        Parcrypt.encryptFile(plain, sealed, key, FileOptions.defaults().withOverwrite(true));
        assertThrows(ParcryptFileException.class,
                () -> Parcrypt.encryptFile(folder.resolve("missing"), folder.resolve("x.pc"), key));
        assertThrows(IllegalArgumentException.class,
                () -> Parcrypt.encryptFile(plain, folder.resolve("y.pc"), new byte[20]));
        assertThrows(IllegalArgumentException.class,
                () -> FileOptions.defaults().withBackend(Backend.forkJoin()));
    }

    @Test
    @SuppressWarnings("deprecation")
    void replace_is_a_working_alias_of_overwrite() throws Exception {
        FileOptions overwriting = FileOptions.defaults().withOverwrite(true);
        assertTrue(overwriting.overwrite());
        assertTrue(overwriting.replace());
        assertEquals(overwriting, FileOptions.defaults().withReplace(true));
        assertFalse(FileOptions.defaults().withReplace(true).withReplace(false).overwrite());
        assertTrue(overwriting.toString().contains("overwrite=true"), overwriting.toString());

        byte[] key = key(16);
        Path plain = folder.resolve("alias.txt");
        Path sealed = folder.resolve("alias.pc");
        Files.writeString(plain, "first");
        Parcrypt.encryptFile(plain, sealed, key);
        Files.writeString(plain, "second, longer");
        assertThrows(ParcryptFileException.class, () -> Parcrypt.encryptFile(plain, sealed, key));
        Parcrypt.encryptFile(plain, sealed, key, FileOptions.defaults().withReplace(true));
        Path opened = folder.resolve("alias.out");
        Parcrypt.decryptFile(sealed, opened, key);
        assertEquals("second, longer", Files.readString(opened));
    }

    @Test
    void an_aborted_or_failed_stream_makes_no_file() throws Exception {
        Path target = folder.resolve("aborted.pc");
        EncryptingOutputStream out = Parcrypt.newEncryptingStream(target, key(16));
        out.write(new byte[100_000]);
        out.abort();
        assertFalse(Files.exists(target));
        assertThrows(IOException.class, () -> out.write(1));
        out.close();
        assertFalse(Files.exists(target));
    }

    @Test
    void context_and_passphrase_round_trip_with_the_command_line() throws Exception {
        byte[] plaintext = "a short secret note".getBytes(StandardCharsets.UTF_8);
        Path plain = folder.resolve("note");
        Files.write(plain, plaintext);
        byte[] key = key(32);
        byte[] context = {9, 8, 7};
        Path sealed = folder.resolve("note.pc");
        Parcrypt.encryptFile(plain, sealed, key, FileOptions.defaults().withContext(context));
        Path opened = folder.resolve("note.out");
        run("decrypt", "--key", Support.HEX.formatHex(key), "--context", "090807", sealed.toString(), "-o",
                opened.toString());
        assertArrayEquals(plaintext, Files.readAllBytes(opened));
        assertThrows(ParcryptFileException.class, () -> Parcrypt.decryptFile(sealed, folder.resolve("n2"), key));

        Path passphraseFile = folder.resolve("passphrase");
        Files.writeString(passphraseFile, "correct horse battery staple\n");
        Path byCli = folder.resolve("note-pass.pc");
        run("encrypt", "--passphrase-file", passphraseFile.toString(), plain.toString(), "-o", byCli.toString());
        Path fromPass = folder.resolve("note-pass.out");
        Parcrypt.decryptFile(byCli, fromPass, "correct horse battery staple".getBytes(StandardCharsets.UTF_8),
                FileOptions.defaults().withPassphrase(true));
        assertArrayEquals(plaintext, Files.readAllBytes(fromPass));
    }
}
