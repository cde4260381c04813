package dev.tessera.ssb;

/**
 * One of the 13 SSB queries.
 *
 * @param name its number, "1.1" to "4.3"
 * @param sql its standard SQL text, over the views {@link SsbTables} registers
 */
public record SsbQuery(String name, String sql) {}
