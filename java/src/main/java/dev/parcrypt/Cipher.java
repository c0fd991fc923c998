package dev.parcrypt;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.lang.ref.Cleaner;
import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.nio.ReadOnlyBufferException;
import java.util.Arrays;
import java.util.Objects;
import javax.crypto.AEADBadTagException;
import javax.crypto.BadPaddingException;

/**
 * A cipher suite ({@code aes-128-gcm}, {@code aes-256-ctr}, {@code bf-cbc}, {@code
 * rc6-128-ecb}, ...) with its key, keyed once, on a {@link Backend}; made by {@link
 * Parcrypt#cipher}. Each call is one whole message, as {@code parcrypt raw} runs it: ECB and
 * CBC pad with PKCS#7 (unless made without padding), CTR counts over the whole IV as one
 * big-endian number, GCM appends the 16-byte tag and, decrypting, checks it before
 * releasing anything ({@link AEADBadTagException} otherwise).
 *
 * <p>A cipher made with an IV uses it for one message: the first {@link #encrypt(byte[])}
 * (or kin) spends it, and a second throws a {@link ParcryptException} ({@link Status#STATE})
 * saying what to do, while decryption may use it again. The {@code ...WithIv} forms take one
 * per message (never repeat a CTR or GCM IV under one key); {@link Aead} draws a fresh
 * random nonce for every message and is the simpler choice for AES-GCM. Any
 * number of threads may use one cipher at once. {@code byte[]}, heap and direct {@link
 * ByteBuffer}s and {@link MemorySegment}s are passed to the library without a copy. Close
 * it to wipe the library's copy of the key now (otherwise that happens when it is garbage).
 */
public final class Cipher implements AutoCloseable {
    private static final MemorySegment NONE = MemorySegment.NULL;

    private final String name;
    private final Backend backend;
    private final NativeHandle handle;
    private final Cleaner.Cleanable cleanable;

    Cipher(String name, byte[] key, byte[] iv, Backend backend, boolean padding, boolean allowShortGcmIv) {
        this.name = Objects.requireNonNull(name, "name");
        this.backend = Objects.requireNonNull(backend, "backend");
        Objects.requireNonNull(key, "key");
        if (iv != null && iv.length == 0) {
            throw new IllegalArgumentException("the IV is empty (pass null to give one per message)");
        }
        MemorySegment engine = Engines.of(backend.engineName, backend.threads);
        MemorySegment pointer;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment keyCopy = arena.allocate(Math.max(key.length, 1));
            MemorySegment.copy(MemorySegment.ofArray(key), 0, keyCopy, 0, key.length);
            MemorySegment ivSegment = iv == null ? NONE : arena.allocate(Math.max(iv.length, 1));
            if (iv != null) {
                MemorySegment.copy(MemorySegment.ofArray(iv), 0, ivSegment, 0, iv.length);
            }
            MemorySegment nameSegment = arena.allocateFrom(name);
            long ivLength = iv == null ? 0L : (long) iv.length;
            int flags = (padding ? 0 : Native.CIPHER_NO_PADDING)
                    | (allowShortGcmIv ? Native.CIPHER_ALLOW_SHORT_GCM_IV : 0);
            try {
                pointer = Errors.handle(NativeCall.run(Errors::check, s -> (int) Native.CIPHER_NEW.invokeExact(engine,
                        nameSegment, keyCopy, (long) key.length, ivSegment, ivLength, flags, Errors.handleSlot(s),
                        Errors.errorSlot(s))));
            } finally {
                keyCopy.fill((byte) 0);
            }
        }
        this.handle = new NativeHandle(pointer, Native.CIPHER_FREE, "cipher");
        this.cleanable = handle.register(this);
    }

    /** @return the suite's name, as given */
    public String name() {
        return name;
    }

    /** @return where the work runs */
    public Backend backend() {
        return backend;
    }

    /**
     * The most bytes a message of {@code inputLength} bytes turns into: 16 more for GCM
     * encryption, up to one block more for padded encryption, 16 fewer for GCM decryption.
     *
     * @param encrypt true for encryption, false for decryption
     * @param inputLength the message's length
     * @return the output's largest length
     */
    public long maxOutputLength(boolean encrypt, long inputLength) {
        if (inputLength < 0) {
            throw new IllegalArgumentException("negative length " + inputLength);
        }
        int direction = encrypt ? Native.ENCRYPT : Native.DECRYPT;
        return Errors.size(NativeCall.on(handle, this, Errors::check, (pointer, s) -> (int) Native.CIPHER_MAX_OUTPUT
                .invokeExact(pointer, direction, inputLength, Errors.sizeSlot(s), Errors.errorSlot(s))));
    }

    // ---- byte[] ----

    /**
     * @param plaintext the message
     * @return its ciphertext (for GCM followed by the tag) under the cipher's IV
     */
    public byte[] encrypt(byte[] plaintext) {
        return encryptWithIv(null, plaintext, null);
    }

    /**
     * @param plaintext the message
     * @param aad GCM's additional authenticated data, or null
     * @return its ciphertext (for GCM followed by the tag) under the cipher's IV
     */
    public byte[] encrypt(byte[] plaintext, byte[] aad) {
        return encryptWithIv(null, plaintext, aad);
    }

    /**
     * @param ciphertext the message (for GCM with its tag)
     * @return its plaintext under the cipher's IV
     * @throws AEADBadTagException a GCM tag that does not match (nothing is returned)
     * @throws BadPaddingException padding that is not PKCS#7 (wrong key or IV)
     */
    public byte[] decrypt(byte[] ciphertext) throws BadPaddingException {
        return decryptWithIv(null, ciphertext, null);
    }

    /**
     * @param ciphertext the message (for GCM with its tag)
     * @param aad GCM's additional authenticated data, or null
     * @return its plaintext under the cipher's IV
     * @throws AEADBadTagException a GCM tag that does not match (nothing is returned)
     * @throws BadPaddingException padding that is not PKCS#7 (wrong key or IV)
     */
    public byte[] decrypt(byte[] ciphertext, byte[] aad) throws BadPaddingException {
        return decryptWithIv(null, ciphertext, aad);
    }

    /**
     * @param iv this message's IV, or null for the cipher's own
     * @param plaintext the message
     * @param aad GCM's additional authenticated data, or null
     * @return its ciphertext (for GCM followed by the tag)
     */
    public byte[] encryptWithIv(byte[] iv, byte[] plaintext, byte[] aad) {
        Objects.requireNonNull(plaintext, "plaintext");
        byte[] output = new byte[Math.toIntExact(maxOutputLength(true, plaintext.length))];
        try {
            long written = process(Native.ENCRYPT, iv, MemorySegment.ofArray(plaintext), MemorySegment.ofArray(output), aad);
            return written == output.length ? output : Arrays.copyOf(output, (int) written);
        } catch (BadPaddingException e) {
            throw new IllegalStateException("encryption reported " + e.getMessage(), e);
        }
    }

    /**
     * @param iv this message's IV, or null for the cipher's own
     * @param ciphertext the message (for GCM with its tag)
     * @param aad GCM's additional authenticated data, or null
     * @return its plaintext
     * @throws AEADBadTagException a GCM tag that does not match (nothing is returned)
     * @throws BadPaddingException padding that is not PKCS#7 (wrong key or IV)
     */
    public byte[] decryptWithIv(byte[] iv, byte[] ciphertext, byte[] aad) throws BadPaddingException {
        Objects.requireNonNull(ciphertext, "ciphertext");
        byte[] output = new byte[Math.toIntExact(maxOutputLength(false, ciphertext.length))];
        long written = process(Native.DECRYPT, iv, MemorySegment.ofArray(ciphertext), MemorySegment.ofArray(output), aad);
        if (written == output.length) {
            return output;
        }
        byte[] result = Arrays.copyOf(output, (int) written);
        Arrays.fill(output, (byte) 0);
        return result;
    }

    // ---- ByteBuffer ----

    /**
     * Encrypts the input's remaining bytes into the output's remaining space, as {@code
     * javax.crypto.Cipher.doFinal(ByteBuffer, ByteBuffer)} does: the input's position moves
     * to its limit, the output's past the bytes written. Heap or direct buffers; no copy.
     *
     * @param input the message
     * @param output room for at least {@link #maxOutputLength} bytes
     * @return the bytes written
     */
    public int encrypt(ByteBuffer input, ByteBuffer output) {
        try {
            return buffers(Native.ENCRYPT, null, input, output, null);
        } catch (BadPaddingException e) {
            throw new IllegalStateException("encryption reported " + e.getMessage(), e);
        }
    }

    /**
     * @param input the message (for GCM with its tag)
     * @param output room for at least {@link #maxOutputLength} bytes
     * @return the bytes written
     * @throws BadPaddingException a GCM tag or padding that does not match
     * @see #encrypt(ByteBuffer, ByteBuffer)
     */
    public int decrypt(ByteBuffer input, ByteBuffer output) throws BadPaddingException {
        return buffers(Native.DECRYPT, null, input, output, null);
    }

    /**
     * @param iv this message's IV, or null for the cipher's own
     * @param input the message
     * @param output room for at least {@link #maxOutputLength} bytes
     * @param aad GCM's additional authenticated data, or null
     * @return the bytes written
     * @see #encrypt(ByteBuffer, ByteBuffer)
     */
    public int encryptWithIv(byte[] iv, ByteBuffer input, ByteBuffer output, byte[] aad) {
        try {
            return buffers(Native.ENCRYPT, iv, input, output, aad);
        } catch (BadPaddingException e) {
            throw new IllegalStateException("encryption reported " + e.getMessage(), e);
        }
    }

    /**
     * @param iv this message's IV, or null for the cipher's own
     * @param input the message (for GCM with its tag)
     * @param output room for at least {@link #maxOutputLength} bytes
     * @param aad GCM's additional authenticated data, or null
     * @return the bytes written
     * @throws BadPaddingException a GCM tag or padding that does not match
     */
    public int decryptWithIv(byte[] iv, ByteBuffer input, ByteBuffer output, byte[] aad) throws BadPaddingException {
        return buffers(Native.DECRYPT, iv, input, output, aad);
    }

    private int buffers(int direction, byte[] iv, ByteBuffer input, ByteBuffer output, byte[] aad)
            throws BadPaddingException {
        MemorySegment from = memory(input, "input");
        MemorySegment into = memory(output, "output");
        if (output.isReadOnly()) {
            throw new ReadOnlyBufferException();
        }
        long written = process(direction, iv, from, into, aad);
        input.position(input.limit());
        output.position(output.position() + (int) written);
        return (int) written;
    }

    /** The memory of a caller's buffer ({@code name} names it when it is null). */
    private static MemorySegment memory(ByteBuffer buffer, String name) {
        return MemorySegment.ofBuffer(Objects.requireNonNull(buffer, name));
    }

    // ---- MemorySegment ----

    /**
     * Encrypts all of {@code input} into the start of {@code output} (native or heap
     * memory, no copy). {@code output} may be {@code input} itself (in place, when it has
     * room for the padding or tag), but may not otherwise overlap it.
     *
     * @param input the message
     * @param output room for at least {@link #maxOutputLength} bytes
     * @return the bytes written
     */
    public long encrypt(MemorySegment input, MemorySegment output) {
        return encryptWithIv(null, input, output, null);
    }

    /**
     * @param input the message (for GCM with its tag)
     * @param output room for at least {@link #maxOutputLength} bytes
     * @return the bytes written
     * @throws BadPaddingException a GCM tag or padding that does not match
     * @see #encrypt(MemorySegment, MemorySegment)
     */
    public long decrypt(MemorySegment input, MemorySegment output) throws BadPaddingException {
        return decryptWithIv(null, input, output, null);
    }

    /**
     * @param iv this message's IV, or null for the cipher's own
     * @param input the message
     * @param output room for at least {@link #maxOutputLength} bytes
     * @param aad GCM's additional authenticated data, or null
     * @return the bytes written
     * @see #encrypt(MemorySegment, MemorySegment)
     */
    public long encryptWithIv(byte[] iv, MemorySegment input, MemorySegment output, byte[] aad) {
        try {
            return process(Native.ENCRYPT, iv, input, output, aad);
        } catch (BadPaddingException e) {
            throw new IllegalStateException("encryption reported " + e.getMessage(), e);
        }
    }

    /**
     * @param iv this message's IV, or null for the cipher's own
     * @param input the message (for GCM with its tag)
     * @param output room for at least {@link #maxOutputLength} bytes
     * @param aad GCM's additional authenticated data, or null
     * @return the bytes written
     * @throws BadPaddingException a GCM tag or padding that does not match
     */
    public long decryptWithIv(byte[] iv, MemorySegment input, MemorySegment output, byte[] aad)
            throws BadPaddingException {
        return process(Native.DECRYPT, iv, input, output, aad);
    }

    // ---- the one path every call takes ----

    private long process(int direction, byte[] iv, MemorySegment input, MemorySegment output, byte[] aad)
            throws BadPaddingException {
        Objects.requireNonNull(input, "input");
        Objects.requireNonNull(output, "output");
        if (output.isReadOnly()) {
            throw new IllegalArgumentException("the output is read-only");
        }
        if (iv != null && iv.length == 0) {
            throw new IllegalArgumentException("the IV is empty");
        }
        MemorySegment ivSegment = iv == null ? NONE : MemorySegment.ofArray(iv);
        MemorySegment aadSegment = aad == null || aad.length == 0 ? NONE : MemorySegment.ofArray(aad);
        if (backend.kind != Backend.Kind.ENGINE) {
            MemorySegment pointer = handle.acquire();
            try {
                return Segments.run(pointer, backend, direction, ivSegment, aadSegment, input, output);
            } finally {
                handle.release();
                Reference.reachabilityFence(this);
            }
        }
        MethodHandle call = iv == null
                ? (direction == Native.ENCRYPT ? Native.CIPHER_ENCRYPT : Native.CIPHER_DECRYPT)
                : (direction == Native.ENCRYPT ? Native.CIPHER_ENCRYPT_IV : Native.CIPHER_DECRYPT_IV);
        return Errors.size(NativeCall.on(handle, this, Errors::checkCrypto, (pointer, s) -> iv == null
                ? (int) call.invokeExact(pointer, input, input.byteSize(), aadSegment, aadSegment.byteSize(), output,
                        output.byteSize(), Errors.sizeSlot(s), Errors.errorSlot(s))
                : (int) call.invokeExact(pointer, ivSegment, ivSegment.byteSize(), input, input.byteSize(), aadSegment,
                        aadSegment.byteSize(), output, output.byteSize(), Errors.sizeSlot(s), Errors.errorSlot(s))));
    }

    /** Wipes the library's copy of the key and frees it (once the calls in progress end). */
    @Override
    public void close() {
        cleanable.clean();
    }

    @Override
    public String toString() {
        return "Cipher[" + name + " on " + backend + (handle.isOpen() ? "" : ", closed") + "]";
    }
}
