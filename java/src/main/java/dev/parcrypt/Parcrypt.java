package dev.parcrypt;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Objects;

/**
 * parcrypt from Java: ciphers over memory and authenticated files, through the library's C
 * ABI. Start here.
 *
 * <pre>{@code
 * try (Aead aead = Parcrypt.aead("aes-256-gcm", key32)) {  // a fresh random nonce per message
 *     byte[] sealed = aead.seal(plaintext, null);      // nonce || ciphertext || tag
 *     byte[] opened = aead.open(sealed, null);         // AEADBadTagException if modified
 * }
 * try (Cipher cipher = Parcrypt.cipher("aes-128-gcm", key)) {  // nonces managed by the caller
 *     byte[] sealed = cipher.encryptWithIv(nonce, plaintext, null);  // a new nonce each time
 *     byte[] opened = cipher.decryptWithIv(nonce, sealed, null);
 * }
 * Parcrypt.encryptFile(Path.of("a.pdf"), Path.of("a.pdf.pc"), key32);  // as `parcrypt encrypt`
 * String recipient = Parcrypt.keygen(Path.of("key.txt"), false);        // as `parcrypt keygen -o`
 * Parcrypt.encryptFile(Path.of("a.pdf"), Path.of("b.pdf.pc"), Recipients.of(recipient));
 * try (Identities me = Identities.fromFile(Path.of("key.txt"))) {
 *     Parcrypt.decryptFile(Path.of("b.pdf.pc"), Path.of("b.pdf"), me);  // as `decrypt -i`
 * }
 * }</pre>
 *
 * <p>What weakens a result without stopping it (a passphrase shorter than 8 bytes, as {@code
 * parcrypt encrypt} warns) is logged to {@code System.getLogger("dev.parcrypt")} at WARNING.
 *
 * <p>The JVM must allow native access: {@code --enable-native-access=ALL-UNNAMED} (or the
 * module's name); an executable jar can say {@code Enable-Native-Access: ALL-UNNAMED} in its
 * manifest. Without it Java 22-25 print a warning and go on.
 */
public final class Parcrypt {
    private Parcrypt() {}

    /** @return the native library's version, such as 0.1.0 */
    public static String version() {
        try {
            return ((MemorySegment) Native.VERSION.invokeExact()).getString(0);
        } catch (Throwable t) {
            throw Errors.unexpected(t);
        }
    }

    /**
     * AES-GCM that seals every message under a fresh random nonce, on the {@link
     * Backend#auto() auto} backend: the call to reach for first.
     *
     * @param name {@code aes-128-gcm}, {@code aes-192-gcm} or {@code aes-256-gcm}
     * @param key 16, 24 or 32 bytes as the suite says ({@link Aead#generateKey}); copied
     * @return the AEAD
     * @throws IllegalArgumentException another suite, a key of the wrong length
     */
    public static Aead aead(String name, byte[] key) {
        return new Aead(name, key, Backend.auto());
    }

    /**
     * @param name {@code aes-128-gcm}, {@code aes-192-gcm} or {@code aes-256-gcm}
     * @param key the key; copied
     * @param backend where the work runs
     * @return the AEAD
     */
    public static Aead aead(String name, byte[] key, Backend backend) {
        return new Aead(name, key, backend);
    }

    /**
     * A cipher on the {@link Backend#auto() auto} backend.
     *
     * @param name the suite: {@code aes-128|aes-192|aes-256} or {@code rc6-128|rc6-192|rc6-256}
     *     plus {@code -ecb|-cbc|-ctr|-gcm}; {@code bf-ecb|bf-cbc|bf-ctr}
     * @param key 16, 24 or 32 bytes (AES, RC6); 4 to 56 (Blowfish); copied
     * @param iv none for ECB (null); one block for CBC and CTR; 12 bytes or more for GCM;
     *     or null to give one per message ({@code encryptWithIv}). It encrypts one message: a
     *     second {@code encrypt} without an IV of its own throws a {@link ParcryptException}
     *     ({@link Status#STATE}); decryption may use it again
     * @return the cipher
     * @throws IllegalArgumentException an unknown name, a key or IV of the wrong length
     */
    public static Cipher cipher(String name, byte[] key, byte[] iv) {
        return new Cipher(name, key, iv, Backend.auto(), true, false);
    }

    /**
     * A cipher without a fixed IV: every message brings its own ({@code encryptWithIv}).
     *
     * @param name the suite
     * @param key the key; copied
     * @return the cipher
     */
    public static Cipher cipher(String name, byte[] key) {
        return new Cipher(name, key, null, Backend.auto(), true, false);
    }

    /**
     * @param name the suite
     * @param key the key; copied
     * @param iv the IV, or null
     * @param backend where the work runs
     * @return the cipher
     */
    public static Cipher cipher(String name, byte[] key, byte[] iv, Backend backend) {
        return new Cipher(name, key, iv, backend, true, false);
    }

    /**
     * @param name the suite
     * @param key the key; copied
     * @param iv the IV, or null
     * @param backend where the work runs
     * @param padding PKCS#7 for ECB and CBC (false: messages must be whole blocks)
     * @return the cipher
     */
    public static Cipher cipher(String name, byte[] key, byte[] iv, Backend backend, boolean padding) {
        return new Cipher(name, key, iv, backend, padding, false);
    }

    /**
     * A cipher that also takes GCM IVs of 1 to 11 bytes, at creation and per message (other
     * ciphers refuse them): only to read or match data another program made with such IVs,
     * which are hashed into the counter and collide far sooner than 12-byte ones.
     *
     * @param name the suite
     * @param key the key; copied
     * @param iv the IV, or null
     * @param backend where the work runs
     * @return the cipher
     */
    public static Cipher cipherAllowingShortGcmIv(String name, byte[] key, byte[] iv, Backend backend) {
        return new Cipher(name, key, iv, backend, true, true);
    }

    /**
     * Encrypts a file as {@code parcrypt encrypt --key} does.
     *
     * @param source the plaintext file
     * @param destination the encrypted file, made only once it is complete
     * @param key a 16- or 32-byte key (AES-128-GCM or AES-256-GCM chunks)
     * @return the plaintext bytes encrypted
     * @throws ParcryptFileException the source cannot be read, the destination exists, ...
     */
    public static long encryptFile(Path source, Path destination, byte[] key) throws IOException {
        return encryptFile(source, destination, key, FileOptions.defaults());
    }

    /**
     * @param source the plaintext file
     * @param destination the encrypted file, made only once it is complete
     * @param secret a 16- or 32-byte key, or a passphrase's bytes (see {@link FileOptions})
     * @param options backend, overwriting, context, passphrase, format: with {@link
     *     FileFormat#AGE} and a passphrase, an age file to that passphrase (scrypt), as {@code
     *     parcrypt encrypt --format age -p} writes it (armored with {@link
     *     FileOptions#withArmor(boolean)})
     * @return the plaintext bytes encrypted
     * @throws ParcryptFileException the source cannot be read, the destination exists, ...
     * @throws IllegalArgumentException an age file under a key or with a context, armor
     *     without {@link FileFormat#AGE}, an age file on a GPU backend
     */
    public static long encryptFile(Path source, Path destination, byte[] secret, FileOptions options)
            throws IOException {
        return wholeFile(Native.ENCRYPT, source, destination, secret, options);
    }

    /**
     * Decrypts a file as {@code parcrypt decrypt --key} does; the destination appears only
     * once every chunk authenticated.
     *
     * @param source the encrypted file
     * @param destination the plaintext file
     * @param key the key it was encrypted with
     * @return the plaintext bytes
     * @throws ParcryptFileException a wrong key, a damaged or truncated file, ...
     */
    public static long decryptFile(Path source, Path destination, byte[] key) throws IOException {
        return decryptFile(source, destination, key, FileOptions.defaults());
    }

    /**
     * @param source the encrypted file
     * @param destination the plaintext file
     * @param secret the key or passphrase it was encrypted with (an age file recognised by
     *     its header opens with its passphrase)
     * @param options backend, overwriting, context, passphrase
     * @return the plaintext bytes
     * @throws ParcryptFileException a wrong key, a damaged or truncated file, ...
     */
    public static long decryptFile(Path source, Path destination, byte[] secret, FileOptions options)
            throws IOException {
        return wholeFile(Native.DECRYPT, source, destination, secret, options);
    }

    /**
     * Encrypts a file to public-key recipients, as {@code parcrypt encrypt -r RECIPIENT}
     * does: AES-128-GCM chunks under a random file key wrapped for each recipient; any one
     * recipient's identity opens it ({@link #decryptFile(Path, Path, Identities)}, {@code
     * parcrypt decrypt -i}).
     *
     * @param source the plaintext file
     * @param destination the encrypted file, made only once it is complete
     * @param recipients who can open it
     * @return the plaintext bytes encrypted
     * @throws ParcryptFileException the source cannot be read, the destination exists, ...
     * @throws IllegalArgumentException a recipient that does not parse (its line is named,
     *     never its text), X25519 and post-quantum recipients mixed
     */
    public static long encryptFile(Path source, Path destination, Recipients recipients) throws IOException {
        return encryptFile(source, destination, recipients, FileOptions.defaults());
    }

    /**
     * @param source the plaintext file
     * @param destination the encrypted file, made only once it is complete
     * @param recipients who can open it
     * @param options backend, overwriting, context (not a passphrase: refused with recipients),
     *     format: {@link FileFormat#AGE} writes an age v1 file to them, as {@code parcrypt
     *     encrypt --format age -r} does (armored with {@link FileOptions#withArmor(boolean)};
     *     no context; a GPU backend refused)
     * @return the plaintext bytes encrypted
     * @throws ParcryptFileException the source cannot be read, the destination exists, ...
     * @throws IllegalArgumentException a recipient that does not parse, recipients mixed,
     *     options that ask for a passphrase, age with a context or a GPU backend
     */
    public static long encryptFile(Path source, Path destination, Recipients recipients, FileOptions options)
            throws IOException {
        Objects.requireNonNull(recipients, "recipients");
        return wholeFile(Native.ENCRYPT, source, destination, recipients.text(), Native.FILE_RECIPIENTS, options);
    }

    /**
     * Decrypts a file encrypted to recipients with the first of {@code identities} that opens
     * it, as {@code parcrypt decrypt -i FILE} does; the destination appears only once every
     * chunk authenticated. An age file (binary or armored, from age, rage or {@code parcrypt
     * encrypt --format age}) is recognised by its header and opened the same way.
     *
     * @param source the encrypted file
     * @param destination the plaintext file
     * @param identities the identities to try (an identity file's text)
     * @return the plaintext bytes
     * @throws ParcryptFileException none of the identities opens it ({@link Status#WRONG_KEY}),
     *     a damaged or truncated file, ...
     * @throws IllegalArgumentException identities that do not parse, a file under a key or
     *     passphrase
     */
    public static long decryptFile(Path source, Path destination, Identities identities) throws IOException {
        return decryptFile(source, destination, identities, FileOptions.defaults());
    }

    /**
     * @param source the encrypted file
     * @param destination the plaintext file
     * @param identities the identities to try
     * @param options backend, overwriting, context (not a passphrase)
     * @return the plaintext bytes
     * @throws ParcryptFileException none of the identities opens it, a damaged file, ...
     * @throws IllegalArgumentException identities that do not parse, options that ask for a
     *     passphrase
     */
    public static long decryptFile(Path source, Path destination, Identities identities, FileOptions options)
            throws IOException {
        Objects.requireNonNull(identities, "identities");
        return wholeFile(Native.DECRYPT, source, destination, identities.bytes(), Native.FILE_IDENTITIES, options);
    }

    /**
     * A new identity for files to recipients, as {@code parcrypt keygen} prints it: keep
     * {@link NewIdentity#identity()} secret (it is wiped when closed) and give {@link
     * NewIdentity#recipient()} to whoever encrypts.
     *
     * @param postQuantum a post-quantum hybrid (ML-KEM-768 + X25519, {@code age1pq1...})
     *     identity rather than an X25519 one ({@code age1...})
     * @return the identity and its recipient
     */
    public static NewIdentity keygen(boolean postQuantum) {
        try {
            return keygenCall(postQuantum, null);
        } catch (IOException e) {
            throw new ParcryptException(Status.IO, e.getMessage());
        }
    }

    /**
     * Writes a new identity file, as {@code parcrypt keygen -o FILE} does: age-keygen's
     * layout, mode 0600, an existing file never replaced.
     *
     * @param identityFile the file to create
     * @param postQuantum a post-quantum hybrid identity rather than an X25519 one
     * @return its recipient, the public key to give to whoever encrypts
     * @throws ParcryptFileException the file exists (it is left as it was), its folder is
     *     missing, ...
     */
    public static String keygen(Path identityFile, boolean postQuantum) throws IOException {
        Objects.requireNonNull(identityFile, "identityFile");
        return keygenCall(postQuantum, identityFile).recipient();
    }

    private static NewIdentity keygenCall(boolean postQuantum, Path file) throws IOException {
        int flags = postQuantum ? Native.KEYGEN_POST_QUANTUM : 0;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment path = file == null ? MemorySegment.NULL : arena.allocateFrom(file.toString());
            MemorySegment scratch = NativeCall.run(Errors::checkFile, s -> (int) Native.KEYGEN.invokeExact(flags, path,
                    Errors.handleSlot(s), Errors.secondSlot(s), Errors.errorSlot(s)));
            MemorySegment identity = scratch.get(Native.STRING, 24);
            MemorySegment recipient = scratch.get(Native.STRING, 16);
            String publicKey = new String(Identities.take(recipient), StandardCharsets.UTF_8);
            return new NewIdentity(file == null ? Identities.adopt(Identities.take(identity)) : null, publicKey);
        }
    }

    private static long wholeFile(int direction, Path source, Path destination, byte[] secret, FileOptions options)
            throws IOException {
        return wholeFile(direction, source, destination, secret, 0, options);
    }

    private static long wholeFile(int direction, Path source, Path destination, byte[] secret, int kind,
            FileOptions options) throws IOException {
        Warnings.install();
        MethodHandle call = direction == Native.ENCRYPT ? Native.ENCRYPT_FILE : Native.DECRYPT_FILE;
        try (FileArguments arguments = new FileArguments(secret, kind, options)) {
            MemorySegment from = arguments.path(source);
            MemorySegment to = arguments.path(destination);
            return Errors.size(NativeCall.run(Errors::checkFile, s -> (int) call.invokeExact(arguments.engine, from, to,
                    arguments.secret, arguments.secret.byteSize(), arguments.context, arguments.context.byteSize(),
                    arguments.flags, Errors.sizeSlot(s), Errors.errorSlot(s))));
        }
    }

    /**
     * @param destination the encrypted file to make (when the stream closes)
     * @param key a 16- or 32-byte key
     * @return a stream that encrypts what is written to it
     * @throws ParcryptFileException the destination exists, its folder is missing, ...
     */
    public static EncryptingOutputStream newEncryptingStream(Path destination, byte[] key) throws IOException {
        return new EncryptingOutputStream(destination, key, FileOptions.defaults());
    }

    /**
     * @param destination the encrypted file to make (when the stream closes)
     * @param secret a key or a passphrase's bytes
     * @param options backend, overwriting, context, passphrase
     * @return a stream that encrypts what is written to it
     * @throws ParcryptFileException the destination exists, its folder is missing, ...
     */
    public static EncryptingOutputStream newEncryptingStream(Path destination, byte[] secret, FileOptions options)
            throws IOException {
        return new EncryptingOutputStream(destination, secret, options);
    }

    /**
     * A stream that encrypts to public-key recipients what is written to it.
     *
     * @param destination the encrypted file to make (when the stream closes)
     * @param recipients who can open it
     * @param options backend, overwriting, context (not a passphrase)
     * @return a stream that encrypts what is written to it
     * @throws ParcryptFileException the destination exists, its folder is missing, ...
     * @throws IllegalArgumentException a recipient that does not parse, recipients mixed
     */
    public static EncryptingOutputStream newEncryptingStream(Path destination, Recipients recipients,
            FileOptions options) throws IOException {
        Objects.requireNonNull(recipients, "recipients");
        return new EncryptingOutputStream(destination, recipients.text(), Native.FILE_RECIPIENTS, options);
    }

    /**
     * @param source a file encrypted to recipients
     * @param identities the identities to try
     * @param options backend, context (not a passphrase)
     * @return a stream of its plaintext
     * @throws ParcryptFileException none of the identities opens it, not a parcrypt file, ...
     * @throws IllegalArgumentException identities that do not parse
     */
    public static DecryptingInputStream newDecryptingStream(Path source, Identities identities, FileOptions options)
            throws IOException {
        Objects.requireNonNull(identities, "identities");
        return new DecryptingInputStream(source, identities.bytes(), Native.FILE_IDENTITIES, options);
    }

    /**
     * @param source a file encrypted to recipients
     * @param identities the identities to try
     * @param options backend, context (not a passphrase)
     * @return random access to its plaintext
     * @throws ParcryptFileException none of the identities opens it, not a parcrypt file, ...
     * @throws IllegalArgumentException identities that do not parse
     */
    public static DecryptingChannel openDecryptingChannel(Path source, Identities identities, FileOptions options)
            throws IOException {
        Objects.requireNonNull(identities, "identities");
        return new DecryptingChannel(source, identities.bytes(), Native.FILE_IDENTITIES, options);
    }

    /**
     * @param source an encrypted file
     * @param key its key
     * @return a stream of its plaintext
     * @throws ParcryptFileException a wrong key, not a parcrypt file, ...
     */
    public static DecryptingInputStream newDecryptingStream(Path source, byte[] key) throws IOException {
        return new DecryptingInputStream(source, key, FileOptions.defaults());
    }

    /**
     * @param source an encrypted file
     * @param secret its key or passphrase's bytes
     * @param options backend, context, passphrase
     * @return a stream of its plaintext
     * @throws ParcryptFileException a wrong key, not a parcrypt file, ...
     */
    public static DecryptingInputStream newDecryptingStream(Path source, byte[] secret, FileOptions options)
            throws IOException {
        return new DecryptingInputStream(source, secret, options);
    }

    /**
     * @param source an encrypted file
     * @param key its key
     * @return random access to its plaintext
     * @throws ParcryptFileException a wrong key, not a parcrypt file, ...
     */
    public static DecryptingChannel openDecryptingChannel(Path source, byte[] key) throws IOException {
        return new DecryptingChannel(source, key, FileOptions.defaults());
    }

    /**
     * @param source an encrypted file
     * @param secret its key or passphrase's bytes
     * @param options backend, context, passphrase
     * @return random access to its plaintext
     * @throws ParcryptFileException a wrong key, not a parcrypt file, ...
     */
    public static DecryptingChannel openDecryptingChannel(Path source, byte[] secret, FileOptions options)
            throws IOException {
        return new DecryptingChannel(source, secret, options);
    }
}
