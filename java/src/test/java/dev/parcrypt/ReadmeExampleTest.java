package dev.parcrypt;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** The Java guide's example (docs/JAVA.md; src/test/java/example/Example.java) runs and says what it should. */
class ReadmeExampleTest {
    @Test
    void the_readme_example_runs() throws Exception {
        PrintStream saved = System.out;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try {
            example.Example.main(new String[0]);
        } finally {
            System.setOut(saved);
        }
        String[] lines = captured.toString(StandardCharsets.UTF_8).split("\n");
        assertEquals(3, lines.length, captured.toString(StandardCharsets.UTF_8));
        assertEquals("attack at dawn", lines[0]);
        assertTrue(lines[1].startsWith("refused: "), lines[1]);
        assertEquals("attack at dawn", lines[2]);
    }

    /** The jar carries the native library for this platform (unless a path overrides it). */
    @Test
    void the_native_library_is_packed_for_this_platform() {
        String resource = "/native/" + Native.platform() + "/" + Native.libraryFileName();
        assertTrue(Native.class.getResource(resource) != null
                || System.getProperty(Native.LIBRARY_PROPERTY) != null, resource + " is not on the class path");
    }

    @Test
    void the_version_is_the_native_library_s() {
        assertTrue(Parcrypt.version().matches("\\d+\\.\\d+\\.\\d+.*"), Parcrypt.version());
    }
}
