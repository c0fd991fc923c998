package dev.parcrypt;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.lang.ref.Cleaner;
import java.util.Arrays;
import java.util.Objects;
import javax.crypto.AEADBadTagException;
import javax.crypto.BadPaddingException;

/**
 * AES-GCM ({@code aes-128-gcm}, {@code aes-192-gcm} or {@code aes-256-gcm}) under one key,
 * every message sealed under a fresh random 96-bit nonce from the operating system: the call
 * to reach for first; made by {@link Parcrypt#aead}.
 *
 * <pre>{@code
 * byte[] key = Aead.generateKey("aes-256-gcm");
 * try (Aead aead = Parcrypt.aead("aes-256-gcm", key)) {
 *     byte[] sealed = aead.seal(plaintext, header);   // nonce || ciphertext || tag
 *     byte[] opened = aead.open(sealed, header);      // AEADBadTagException if modified
 * }
 * }</pre>
 *
 * <p>A sealed message is {@code nonce (12 bytes) || ciphertext || tag (16 bytes)}: {@code
 * javax.crypto.Cipher} opens it as {@code AES/GCM/NoPadding} with a {@code
 * GCMParameterSpec(128, sealed, 0, 12)} over the rest. Nothing about nonces is left to the
 * caller, so none is reused by accident. One object seals at most 2^32 messages, NIST SP
 * 800-38D's limit for random nonces (then a {@link ParcryptException} with {@link
 * Status#STATE}: make a new key). Any number of threads may use one at once. Close it to wipe
 * the library's copy of the key now (otherwise that happens when it is garbage). A protocol
 * that manages its own nonces uses a {@link Cipher} with {@code encryptWithIv}.
 */
public final class Aead implements AutoCloseable {
    /** The bytes of the random nonce at the front of a sealed message. */
    public static final int NONCE_BYTES = 12;

    /** The bytes sealing adds to a message: the nonce in front and the 16-byte tag. */
    public static final int OVERHEAD = 28;

    private static final MemorySegment NONE = MemorySegment.NULL;

    private final String name;
    private final Backend backend;
    private final NativeHandle handle;
    private final Cleaner.Cleanable cleanable;

    Aead(String name, byte[] key, Backend backend) {
        this.name = Objects.requireNonNull(name, "name");
        this.backend = Objects.requireNonNull(backend, "backend");
        Objects.requireNonNull(key, "key");
        MemorySegment engine = Engines.of(backend.engineName, backend.threads);
        MemorySegment pointer;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment keyCopy = arena.allocate(Math.max(key.length, 1));
            MemorySegment.copy(MemorySegment.ofArray(key), 0, keyCopy, 0, key.length);
            MemorySegment nameSegment = arena.allocateFrom(name);
            try {
                pointer = Errors.handle(NativeCall.run(Errors::check, s -> (int) Native.AEAD_NEW.invokeExact(engine,
                        nameSegment, keyCopy, (long) key.length, Errors.handleSlot(s), Errors.errorSlot(s))));
            } finally {
                keyCopy.fill((byte) 0);
            }
        }
        this.handle = new NativeHandle(pointer, Native.AEAD_FREE, "aead");
        this.cleanable = handle.register(this);
    }

    /**
     * A new random key for an AES-GCM suite, from the operating system.
     *
     * @param name {@code aes-128-gcm}, {@code aes-192-gcm} or {@code aes-256-gcm}
     * @return 16, 24 or 32 bytes, the caller's to keep secret
     * @throws IllegalArgumentException another suite
     */
    public static byte[] generateKey(String name) {
        Objects.requireNonNull(name, "name");
        byte[] key = new byte[32];
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(key.length);
            MemorySegment nameSegment = arena.allocateFrom(name);
            int length = (int) Errors.size(NativeCall.run(Errors::check, s -> (int) Native.AEAD_GENERATE_KEY
                    .invokeExact(nameSegment, out, (long) key.length, Errors.sizeSlot(s), Errors.errorSlot(s))));
            MemorySegment.copy(out, 0, MemorySegment.ofArray(key), 0, length);
            out.fill((byte) 0);
            if (length == key.length) {
                return key;
            }
            byte[] shorter = Arrays.copyOf(key, length);
            Arrays.fill(key, (byte) 0);
            return shorter;
        }
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
     * Seals a message under a fresh random nonce.
     *
     * @param plaintext the message
     * @param aad additional authenticated data, or null
     * @return {@code nonce || ciphertext || tag}, {@link #OVERHEAD} bytes longer
     */
    public byte[] seal(byte[] plaintext, byte[] aad) {
        Objects.requireNonNull(plaintext, "plaintext");
        byte[] sealed = new byte[Math.addExact(plaintext.length, OVERHEAD)];
        try {
            long written = run(Native.AEAD_SEAL, plaintext, sealed, aad);
            if (written != sealed.length) {
                throw new IllegalStateException("sealing wrote " + written + " of " + sealed.length + " bytes");
            }
        } catch (BadPaddingException e) {
            throw new IllegalStateException("sealing reported " + e.getMessage(), e);
        }
        return sealed;
    }

    /**
     * Opens a sealed message.
     *
     * @param sealed {@code nonce || ciphertext || tag}
     * @param aad the additional authenticated data it was sealed with, or null
     * @return the plaintext
     * @throws AEADBadTagException a changed byte, another AAD, or fewer than {@link #OVERHEAD}
     *     bytes (nothing is returned)
     */
    public byte[] open(byte[] sealed, byte[] aad) throws AEADBadTagException {
        Objects.requireNonNull(sealed, "sealed");
        byte[] opened = new byte[Math.max(sealed.length - OVERHEAD, 0)];
        try {
            run(Native.AEAD_OPEN, sealed, opened, aad);
        } catch (AEADBadTagException e) {
            throw e;
        } catch (BadPaddingException e) {
            throw new IllegalStateException("opening reported " + e.getMessage(), e);
        }
        return opened;
    }

    private long run(MethodHandle call, byte[] input, byte[] output, byte[] aad)
            throws BadPaddingException {
        MemorySegment aadSegment = aad == null || aad.length == 0 ? NONE : MemorySegment.ofArray(aad);
        return Errors.size(NativeCall.on(handle, this, Errors::checkCrypto, (pointer, s) -> (int) call.invokeExact(
                pointer, MemorySegment.ofArray(input), (long) input.length, aadSegment, aadSegment.byteSize(),
                MemorySegment.ofArray(output), (long) output.length, Errors.sizeSlot(s), Errors.errorSlot(s))));
    }

    /** Wipes the library's copy of the key and frees it (once the calls in progress end). */
    @Override
    public void close() {
        cleanable.clean();
    }

    @Override
    public String toString() {
        return "Aead[" + name + " on " + backend + (handle.isOpen() ? "" : ", closed") + "]";
    }
}
