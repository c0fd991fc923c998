package dev.parcrypt;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;

/**
 * The library's warnings on the {@link System.Logger} named {@code dev.parcrypt}, at {@link
 * System.Logger.Level#WARNING WARNING}: what weakens a result without stopping the call (a
 * passphrase shorter than 8 bytes), the lines {@code parcrypt encrypt} prints. One upcall is
 * the C ABI's process-wide warning callback ({@code parcrypt_set_warning_callback}), set
 * before the first call that can warn. A C program in the same process that sets its own
 * callback replaces this one.
 */
final class Warnings {
    private Warnings() {}

    /** Where every warning goes; System.getLogger picks the application's logging backend. */
    static final System.Logger LOGGER = System.getLogger("dev.parcrypt");

    /** Whether the callback is set; false only if the upcall could not be made. */
    private static final boolean INSTALLED = install0();

    /**
     * Sets the callback once (the class's initialisation does it); a failure to do so is
     * logged and never stops the caller, which then runs without warnings.
     *
     * @return whether warnings reach {@link #LOGGER}
     */
    static boolean install() {
        return INSTALLED;
    }

    // Upcalls are restricted methods, as downcalls are (Native says why this is fine).
    @SuppressWarnings("restricted")
    private static boolean install0() {
        try {
            MemorySegment stub = Linker.nativeLinker().upcallStub(
                    MethodHandles.lookup().findStatic(Warnings.class, "log",
                            MethodType.methodType(void.class, MemorySegment.class, MemorySegment.class)),
                    FunctionDescriptor.ofVoid(Native.POINTER, Native.STRING),
                    Arena.global());
            NativeCall.run(Errors::check, s -> (int) Native.SET_WARNING_CALLBACK.invokeExact(
                    stub, MemorySegment.NULL, Errors.errorSlot(s)));
            return true;
        } catch (Throwable t) {
            LOGGER.log(System.Logger.Level.WARNING, "parcrypt's warnings cannot reach this logger", t);
            return false;
        }
    }

    /**
     * The callback: runs on the thread of the call that warns, before it returns. Nothing
     * may be thrown out of an upcall (the JVM would end), so a failing logger is ignored.
     */
    private static void log(MemorySegment context, MemorySegment message) {
        try {
            LOGGER.log(System.Logger.Level.WARNING, message.getString(0));
        } catch (Throwable ignored) {
            // A logger that fails cannot be told so; the call goes on.
        }
    }
}
