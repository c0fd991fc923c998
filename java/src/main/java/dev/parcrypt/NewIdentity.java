package dev.parcrypt;

/**
 * A new identity from {@link Parcrypt#keygen(boolean)}: the identity file's text (a secret,
 * wiped by {@link #close()}) and its recipient, the public key to give to whoever encrypts.
 *
 * @param identity the identity, as an identity file's text ({@link Identities#toChars()} to
 *     store it)
 * @param recipient its public key, {@code age1...} or {@code age1pq1...}
 */
public record NewIdentity(Identities identity, String recipient) implements AutoCloseable {
    /** Wipes the identity. */
    @Override
    public void close() {
        identity.close();
    }
}
