// javax.crypto alone, one thread, AES-128-CTR and AES-128-GCM encryption from one byte[] into
// another under a fresh IV per message: the baseline the JVM targets are stated against, on
// any JDK from 17 (single-file source: `java JavaxBaseline.java`). Each size first runs
// 6 seconds untimed (the JIT compiles the AES intrinsics late on a small machine: CTR ran at
// 0.4 GB/s for 4 seconds of 1 MiB messages, then at 40), then 5 timed runs of at least a
// second; prints the median GB/s as one Markdown row per suite.
import java.nio.ByteBuffer;
import java.util.Arrays;
import javax.crypto.Cipher;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.IvParameterSpec;
import javax.crypto.spec.SecretKeySpec;

public final class JavaxBaseline {
    static long counter;

    static int message(Cipher cipher, SecretKeySpec key, boolean gcm, byte[] iv, byte[] in, int length, byte[] out)
            throws Exception {
        ByteBuffer.wrap(iv).putLong(4, ++counter);
        if (gcm) {
            cipher.init(Cipher.ENCRYPT_MODE, key, new GCMParameterSpec(128, iv));
        } else {
            cipher.init(Cipher.ENCRYPT_MODE, key, new IvParameterSpec(iv));
        }
        return cipher.doFinal(in, 0, length, out, 0);
    }

    public static void main(String[] args) throws Exception {
        int[] sizes = {1 << 10, 1 << 20, 64 << 20, 256 << 20};
        byte[] input = new byte[sizes[sizes.length - 1]];
        byte[] output = new byte[input.length + 16];
        SecretKeySpec key = new SecretKeySpec(new byte[16], "AES");
        for (String suite : new String[] {"aes-128-ctr", "aes-128-gcm"}) {
            boolean gcm = suite.endsWith("gcm");
            Cipher cipher = Cipher.getInstance(gcm ? "AES/GCM/NoPadding" : "AES/CTR/NoPadding");
            byte[] iv = new byte[gcm ? 12 : 16];
            StringBuilder row = new StringBuilder("| Java " + System.getProperty("java.version") + " javax.crypto | "
                    + suite + " |");
            for (int size : sizes) {
                int warm = Math.min(size, 1 << 20);
                long began = System.nanoTime();
                while (System.nanoTime() - began < 6_000_000_000L) {
                    message(cipher, key, gcm, iv, input, warm, output);
                }
                double[] rates = new double[5];
                for (int run = 0; run < rates.length; run++) {
                    long bytes = 0;
                    long start = System.nanoTime();
                    while (System.nanoTime() - start < 1_000_000_000L) {
                        message(cipher, key, gcm, iv, input, size, output);
                        bytes += size;
                    }
                    rates[run] = bytes / ((System.nanoTime() - start) / 1e9) / 1e9;
                }
                Arrays.sort(rates);
                row.append(String.format(" %.2f |", rates[2]));
            }
            System.out.println(row);
        }
    }
}
