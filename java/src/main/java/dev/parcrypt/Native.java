package dev.parcrypt;

import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.AddressLayout;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Arrays;
import java.util.Locale;

/**
 * Every downcall into libparcrypt (crates/capi/include/parcrypt.h), written by hand: one
 * {@link MethodHandle} per C function, and the loading of the library itself.
 *
 * <p>The library is found, in order: at the path in the system property {@code
 * parcrypt.library.path}; else inside the jar under {@code native/<os>-<arch>/}, copied once
 * to a temporary file that is deleted when the JVM exits. Calls whose buffers may be Java
 * arrays are linked with {@link Linker.Option#critical(boolean) critical(true)}, so a
 * {@code byte[]} is passed without a copy.
 */
// Linking and loading native code are restricted methods: this class is the one place that
// calls them, and the JVM still asks for --enable-native-access at run time.
@SuppressWarnings("restricted")
final class Native {
    private Native() {}

    /** The system property naming a libparcrypt.so to load instead of the jar's own. */
    static final String LIBRARY_PROPERTY = "parcrypt.library.path";

    static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT;
    static final ValueLayout.OfLong SIZE = ValueLayout.JAVA_LONG;
    static final AddressLayout POINTER = ValueLayout.ADDRESS;
    /** A pointer to a NUL-terminated string, read up to its end. */
    static final AddressLayout STRING =
            ValueLayout.ADDRESS.withTargetLayout(MemoryLayout.sequenceLayout(Long.MAX_VALUE, ValueLayout.JAVA_BYTE));

    static final int ENCRYPT = 0;
    static final int DECRYPT = 1;
    static final int CIPHER_NO_PADDING = 1;
    static final int CIPHER_ALLOW_SHORT_GCM_IV = 2;
    static final int FILE_OVERWRITE = 1;
    static final int FILE_PASSPHRASE = 2;
    static final int FILE_RECIPIENTS = 8;
    static final int FILE_IDENTITIES = 16;
    static final int FILE_AGE = 32;
    static final int FILE_ARMOR = 64;
    static final int KEYGEN_POST_QUANTUM = 1;
    static final int SEEK_SET = 0;

    private static final SymbolLookup LIBRARY = load();
    private static final Linker LINKER = Linker.nativeLinker();

    static final MethodHandle VERSION = handle("parcrypt_version", FunctionDescriptor.of(STRING));
    static final MethodHandle ENGINE_NEW = handle("parcrypt_engine_new", status(POINTER, SIZE, POINTER));
    static final MethodHandle ENGINE_BACKEND = handle("parcrypt_engine_backend", FunctionDescriptor.of(STRING, POINTER));
    static final MethodHandle ENGINE_FREE = handle("parcrypt_engine_free", FunctionDescriptor.ofVoid(POINTER));

    static final MethodHandle CIPHER_NEW = handle("parcrypt_cipher_new",
            status(POINTER, POINTER, POINTER, SIZE, POINTER, SIZE, INT, POINTER));
    static final MethodHandle CIPHER_FREE = handle("parcrypt_cipher_free", FunctionDescriptor.ofVoid(POINTER));
    static final MethodHandle CIPHER_MAX_OUTPUT = handle("parcrypt_cipher_max_output_length",
            status(POINTER, INT, SIZE, POINTER));
    /** A whole message: the handle, the input, the AAD, the output, its length written. */
    private static final FunctionDescriptor MESSAGE = status(POINTER, POINTER, SIZE, POINTER, SIZE, POINTER, SIZE, POINTER);
    /** A whole message under an IV of its own (after the handle). */
    private static final FunctionDescriptor MESSAGE_IV =
            status(POINTER, POINTER, SIZE, POINTER, SIZE, POINTER, SIZE, POINTER, SIZE, POINTER);
    static final MethodHandle CIPHER_ENCRYPT = critical("parcrypt_cipher_encrypt", MESSAGE);
    static final MethodHandle CIPHER_DECRYPT = critical("parcrypt_cipher_decrypt", MESSAGE);
    static final MethodHandle CIPHER_ENCRYPT_IV = critical("parcrypt_cipher_encrypt_iv", MESSAGE_IV);
    static final MethodHandle CIPHER_DECRYPT_IV = critical("parcrypt_cipher_decrypt_iv", MESSAGE_IV);

    static final MethodHandle AEAD_NEW = handle("parcrypt_aead_new", status(POINTER, POINTER, POINTER, SIZE, POINTER));
    static final MethodHandle AEAD_FREE = handle("parcrypt_aead_free", FunctionDescriptor.ofVoid(POINTER));
    static final MethodHandle AEAD_GENERATE_KEY = handle("parcrypt_aead_generate_key",
            status(POINTER, POINTER, SIZE, POINTER));
    static final MethodHandle AEAD_SEAL = critical("parcrypt_aead_seal", MESSAGE);
    static final MethodHandle AEAD_OPEN = critical("parcrypt_aead_open", MESSAGE);

    static final MethodHandle SEGMENTED_NEW = critical("parcrypt_segmented_new",
            status(POINTER, INT, POINTER, SIZE, POINTER, SIZE, SIZE, POINTER));
    static final MethodHandle SEGMENTED_LAYOUT = handle("parcrypt_segmented_layout", status(POINTER, INT, POINTER, POINTER));
    static final MethodHandle SEGMENTED_RUN = critical("parcrypt_segmented_run",
            status(POINTER, SIZE, POINTER, POINTER, SIZE));
    static final MethodHandle SEGMENTED_AUTHENTICATE = critical("parcrypt_segmented_authenticate",
            status(POINTER, POINTER, POINTER));
    static final MethodHandle SEGMENTED_FINISH = critical("parcrypt_segmented_finish",
            status(POINTER, POINTER, POINTER, SIZE, POINTER));
    static final MethodHandle SEGMENTED_FREE = handle("parcrypt_segmented_free", FunctionDescriptor.ofVoid(POINTER));

    static final MethodHandle ERROR_STATUS = handle("parcrypt_error_status", FunctionDescriptor.of(INT, POINTER));
    static final MethodHandle ERROR_MESSAGE = handle("parcrypt_error_message", FunctionDescriptor.of(STRING, POINTER));
    static final MethodHandle ERROR_FREE = handle("parcrypt_error_free", FunctionDescriptor.ofVoid(POINTER));
    static final MethodHandle SET_WARNING_CALLBACK = handle("parcrypt_set_warning_callback", status(POINTER, POINTER));

    /** A whole file: the engine, source and destination, secret, context, flags, bytes written. */
    private static final FunctionDescriptor WHOLE_FILE =
            status(POINTER, POINTER, POINTER, POINTER, SIZE, POINTER, SIZE, INT, POINTER);
    static final MethodHandle ENCRYPT_FILE = handle("parcrypt_encrypt_file", WHOLE_FILE);
    static final MethodHandle DECRYPT_FILE = handle("parcrypt_decrypt_file", WHOLE_FILE);
    /** A file handle's making: the engine, the file's name, secret, context, flags, the handle. */
    private static final FunctionDescriptor FILE_HANDLE = status(POINTER, POINTER, POINTER, SIZE, POINTER, SIZE, INT, POINTER);
    static final MethodHandle FILE_ENCRYPTOR_NEW = handle("parcrypt_file_encryptor_new", FILE_HANDLE);
    static final MethodHandle FILE_ENCRYPTOR_WRITE = handle("parcrypt_file_encryptor_write", status(POINTER, POINTER, SIZE));
    static final MethodHandle FILE_ENCRYPTOR_FINISH = handle("parcrypt_file_encryptor_finish", status(POINTER));
    static final MethodHandle FILE_ENCRYPTOR_FREE = handle("parcrypt_file_encryptor_free", FunctionDescriptor.ofVoid(POINTER));
    static final MethodHandle FILE_DECRYPTOR_OPEN = handle("parcrypt_file_decryptor_open", FILE_HANDLE);
    static final MethodHandle FILE_DECRYPTOR_READ = handle("parcrypt_file_decryptor_read",
            status(POINTER, POINTER, SIZE, POINTER));
    static final MethodHandle FILE_DECRYPTOR_READ_AT = handle("parcrypt_file_decryptor_read_at",
            status(POINTER, SIZE, POINTER, SIZE, POINTER));
    static final MethodHandle FILE_DECRYPTOR_LENGTH = handle("parcrypt_file_decryptor_length", status(POINTER, POINTER));
    static final MethodHandle FILE_DECRYPTOR_FREE = handle("parcrypt_file_decryptor_free", FunctionDescriptor.ofVoid(POINTER));

    /** A new identity: flags, a path or NULL, the identity text and the recipient written. */
    static final MethodHandle KEYGEN = handle("parcrypt_keygen", status(INT, POINTER, POINTER, POINTER));
    /** An identity file's text, read and checked by the library: the path, the text written. */
    static final MethodHandle READ_IDENTITY_FILE = handle("parcrypt_read_identity_file", status(POINTER, POINTER));
    /** Frees (and wipes) a string the library returned. */
    static final MethodHandle STRING_FREE = handle("parcrypt_string_free", FunctionDescriptor.ofVoid(POINTER));

    /**
     * The same native memory without its arena's thread confinement, for the Java
     * strategies' worker threads. Sound only while the caller that owns the segment waits
     * for those threads (it does: a confined arena can be closed by its owner alone).
     */
    static MemorySegment unconfined(MemorySegment segment) {
        if (!segment.isNative() || segment.equals(MemorySegment.NULL)) {
            return segment;
        }
        // Touching it checks, as a downcall would, that it is alive and this thread's.
        if (!segment.scope().isAlive()) {
            throw new IllegalStateException("Already closed");
        }
        if (!segment.isAccessibleBy(Thread.currentThread())) {
            throw new WrongThreadException("Attempted access outside owning thread");
        }
        return MemorySegment.ofAddress(segment.address()).reinterpret(segment.byteSize());
    }

    /**
     * A fallible function's descriptor: it returns a ParcryptStatus and takes {@code
     * arguments}, then the {@code ParcryptError **error} every fallible function ends with.
     */
    private static FunctionDescriptor status(MemoryLayout... arguments) {
        MemoryLayout[] all = Arrays.copyOf(arguments, arguments.length + 1);
        all[arguments.length] = POINTER;
        return FunctionDescriptor.of(INT, all);
    }

    private static MethodHandle handle(String name, FunctionDescriptor descriptor) {
        return LINKER.downcallHandle(symbol(name), descriptor);
    }

    /** A call that may take Java arrays (heap segments) for its pointers. */
    private static MethodHandle critical(String name, FunctionDescriptor descriptor) {
        return LINKER.downcallHandle(symbol(name), descriptor, Linker.Option.critical(true));
    }

    private static MemorySegment symbol(String name) {
        return LIBRARY.find(name).orElseThrow(
                () -> new UnsatisfiedLinkError("libparcrypt has no symbol " + name + " (a library older than this jar?)"));
    }

    /** The platform folder this JVM's library lives in inside the jar: linux-x86_64, ... */
    static String platform() {
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
        String osName = os.startsWith("linux") ? "linux" : os.startsWith("mac") ? "macos" : os.startsWith("windows") ? "windows" : os;
        String archName = switch (arch) {
            case "amd64", "x86_64" -> "x86_64";
            case "aarch64", "arm64" -> "aarch64";
            default -> arch;
        };
        return osName + "-" + archName;
    }

    static String libraryFileName() {
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        if (os.startsWith("windows")) {
            return "parcrypt.dll";
        }
        return os.startsWith("mac") ? "libparcrypt.dylib" : "libparcrypt.so";
    }

    private static SymbolLookup load() {
        String override = System.getProperty(LIBRARY_PROPERTY);
        if (override != null && !override.isEmpty()) {
            Path path = Path.of(override);
            if (!Files.isRegularFile(path)) {
                throw new UnsatisfiedLinkError(LIBRARY_PROPERTY + " names " + path + ", which is not a file");
            }
            return SymbolLookup.libraryLookup(path, Arena.global());
        }
        String resource = "/native/" + platform() + "/" + libraryFileName();
        try (InputStream in = Native.class.getResourceAsStream(resource)) {
            if (in == null) {
                throw new UnsatisfiedLinkError("this parcrypt jar has no native library for " + platform()
                        + " (" + resource + "); build one with `cargo build --release -p parcrypt-capi` and set -D"
                        + LIBRARY_PROPERTY + "=PATH");
            }
            Path directory = Files.createTempDirectory("parcrypt-");
            Path file = directory.resolve(libraryFileName());
            Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
            file.toFile().deleteOnExit();
            directory.toFile().deleteOnExit();
            return SymbolLookup.libraryLookup(file, Arena.global());
        } catch (IOException e) {
            throw new UnsatisfiedLinkError("cannot unpack " + resource + ": " + e.getMessage());
        }
    }
}
