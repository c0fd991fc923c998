package dev.parcrypt;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Objects;

/**
 * Who a file is encrypted to: public keys, {@code age1...} (X25519) or {@code age1pq1...}
 * (ML-KEM-768 + X25519, post-quantum; not mixed with X25519), as {@link Parcrypt#keygen}
 * and {@code parcrypt keygen} print them. Any one recipient's identity opens the file.
 * Immutable; nothing secret is held.
 *
 * <pre>{@code
 * Recipients to = Recipients.of("age1...", "age1...");       // or Recipients.fromFile(path)
 * Parcrypt.encryptFile(Path.of("notes.txt"), Path.of("notes.txt.pc"), to);
 * }</pre>
 *
 * <p>The keys are parsed by the library when a file call uses them: a malformed one is an
 * {@link IllegalArgumentException} there, whose message names its line, never the key.
 */
public final class Recipients {
    /** The largest recipients file read, as the library's limit (16 MiB). */
    static final int MAX_FILE_BYTES = 16 << 20;

    /** The text of a recipients file: one key a line, {@code #} comments. */
    private final String text;

    private Recipients(String text) {
        this.text = text;
    }

    /**
     * @param recipients one public key each ({@code age1...} or {@code age1pq1...})
     * @return those recipients
     * @throws IllegalArgumentException none given, or one that is empty, a comment or holds
     *     a line break (a recipients file's text goes to {@link #parse})
     */
    public static Recipients of(String... recipients) {
        return of(List.of(recipients));
    }

    /**
     * @param recipients one public key each ({@code age1...} or {@code age1pq1...})
     * @return those recipients
     * @throws IllegalArgumentException none given, or one that is empty, a comment or holds
     *     a line break (a recipients file's text goes to {@link #parse})
     */
    public static Recipients of(List<String> recipients) {
        Objects.requireNonNull(recipients, "recipients");
        if (recipients.isEmpty()) {
            throw new IllegalArgumentException("no recipients given");
        }
        StringBuilder text = new StringBuilder();
        for (String recipient : recipients) {
            Objects.requireNonNull(recipient, "recipient");
            String key = recipient.strip();
            if (key.isEmpty() || key.startsWith("#") || key.indexOf('\n') >= 0 || key.indexOf('\r') >= 0) {
                throw new IllegalArgumentException("a recipient is one age1... or age1pq1... key, not "
                        + (key.isEmpty() ? "an empty string" : "a file's text (use Recipients.parse)"));
            }
            text.append(key).append('\n');
        }
        return new Recipients(text.toString());
    }

    /**
     * @param recipientsFileText a recipients file's text, as {@code parcrypt encrypt -R FILE}
     *     reads it: one key a line, {@code #} comments and empty lines ignored
     * @return those recipients
     */
    public static Recipients parse(String recipientsFileText) {
        return new Recipients(Objects.requireNonNull(recipientsFileText, "recipientsFileText"));
    }

    /**
     * @param recipientsFile a recipients file ({@link #parse}'s layout; at most 16 MiB)
     * @return its recipients
     * @throws IOException it cannot be read, or is over 16 MiB
     */
    public static Recipients fromFile(Path recipientsFile) throws IOException {
        try (InputStream in = Files.newInputStream(recipientsFile)) {
            byte[] bytes = in.readNBytes(MAX_FILE_BYTES + 1);
            if (bytes.length > MAX_FILE_BYTES) {
                throw new IOException("recipients file " + recipientsFile + " is over 16 MiB");
            }
            return new Recipients(new String(bytes, StandardCharsets.UTF_8));
        }
    }

    /** @return the recipients file's text these recipients are given to the library as */
    byte[] text() {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    /** @return the recipients, as a recipients file holds them */
    @Override
    public String toString() {
        return text;
    }
}
