package dev.parcrypt;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Objects;

/**
 * What opens a file encrypted to recipients: the text of an identity file as {@code
 * parcrypt keygen} and age-keygen write it ({@code AGE-SECRET-KEY-1...} or {@code
 * AGE-SECRET-KEY-PQ-1...} lines, {@code #} comments); the first identity that opens one of
 * the file's recipients is used. A secret: it is kept in a byte array that {@link #close()}
 * wipes, and never printed.
 *
 * <pre>{@code
 * try (Identities identities = Identities.fromFile(Path.of("key.txt"))) {
 *     Parcrypt.decryptFile(Path.of("notes.txt.pc"), Path.of("notes.txt"), identities);
 * }
 * }</pre>
 *
 * <p>The library parses the text when a file call uses it: one that does not parse is an
 * {@link IllegalArgumentException} whose message names the line, never its content.
 */
public final class Identities implements AutoCloseable {
    /** The identity file's text, UTF-8; null once closed. */
    private byte[] text;

    private Identities(byte[] text) {
        this.text = text;
    }

    /**
     * Reads an identity file through the library, as {@code parcrypt decrypt -i} does: a file
     * that other users can read gets a warning on the {@code dev.parcrypt} logger (as ssh
     * gives for a private key) and is read all the same.
     *
     * @param identityFile an identity file (at most 16 MiB); other users should not be able
     *     to read it ({@code parcrypt keygen} and {@link Parcrypt#keygen(Path, boolean)} make
     *     it 0600)
     * @return its identities
     * @throws IOException it cannot be read, or is over 16 MiB
     * @throws IllegalArgumentException a key in it does not parse (the message names the
     *     line, never its content)
     */
    public static Identities fromFile(Path identityFile) throws IOException {
        Objects.requireNonNull(identityFile, "identityFile");
        Warnings.install();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment path = arena.allocateFrom(identityFile.toString());
            MemorySegment scratch = NativeCall.run(Errors::checkFile, s -> (int) Native.READ_IDENTITY_FILE.invokeExact(
                    path, Errors.handleSlot(s), Errors.errorSlot(s)));
            return new Identities(take(scratch.get(Native.STRING, 24)));
        }
    }

    /**
     * @param identityFileText an identity file's text, UTF-8; copied (the caller wipes its own)
     * @return its identities
     */
    public static Identities of(byte[] identityFileText) {
        return new Identities(Objects.requireNonNull(identityFileText, "identityFileText").clone());
    }

    /**
     * @param identityFileText an identity file's text; copied (the caller wipes its own)
     * @return its identities
     */
    public static Identities of(char[] identityFileText) {
        Objects.requireNonNull(identityFileText, "identityFileText");
        ByteBuffer encoded = StandardCharsets.UTF_8.encode(CharBuffer.wrap(identityFileText));
        byte[] bytes = new byte[encoded.remaining()];
        encoded.get(bytes);
        wipe(encoded);
        return new Identities(bytes);
    }

    /**
     * The identity file's text, to store where the caller keeps secrets (a new identity from
     * {@link Parcrypt#keygen(boolean)}, say).
     *
     * @return a copy of the text; the caller wipes it ({@code Arrays.fill(text, '\0')})
     * @throws IllegalStateException closed
     */
    public synchronized char[] toChars() {
        CharBuffer decoded = StandardCharsets.UTF_8.decode(ByteBuffer.wrap(bytes()));
        char[] chars = new char[decoded.remaining()];
        decoded.get(chars);
        if (decoded.hasArray()) {
            Arrays.fill(decoded.array(), '\0');
        }
        return chars;
    }

    /** @return the text, for a file call to copy (the library's copy is wiped after the call) */
    synchronized byte[] bytes() {
        if (text == null) {
            throw new IllegalStateException("these identities are closed");
        }
        return text;
    }

    /** Wipes the text; later use throws {@link IllegalStateException}. */
    @Override
    public synchronized void close() {
        if (text != null) {
            Arrays.fill(text, (byte) 0);
            text = null;
        }
    }

    /** @return a description without the secret */
    @Override
    public String toString() {
        return "Identities[redacted]";
    }

    private static void wipe(ByteBuffer buffer) {
        if (buffer.hasArray()) {
            Arrays.fill(buffer.array(), (byte) 0);
        }
    }

    /**
     * Takes a NUL-terminated string the library returned: a copy of its bytes, after which
     * the library's copy is freed and wiped ({@code parcrypt_string_free}).
     */
    static byte[] take(MemorySegment string) {
        if (string.equals(MemorySegment.NULL)) {
            throw new ParcryptException(Status.INTERNAL, "the library returned no string");
        }
        try {
            long length = 0;
            while (string.get(ValueLayout.JAVA_BYTE, length) != 0) {
                length++;
            }
            return string.asSlice(0, length).toArray(ValueLayout.JAVA_BYTE);
        } finally {
            NativeCall.free(Native.STRING_FREE, string);
        }
    }

    /** Identities made from the library's text, which is taken over (not copied). */
    static Identities adopt(byte[] text) {
        return new Identities(text);
    }
}
