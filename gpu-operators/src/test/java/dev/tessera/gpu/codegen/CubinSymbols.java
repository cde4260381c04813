package dev.tessera.gpu.codegen;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The function symbols of a cubin (a little-endian ELF64 image), read without NVIDIA's tools:
 * enough to see whether ptxas kept a called function as a subroutine of its own.
 */
final class CubinSymbols {
  private static final int SHT_SYMTAB = 2;
  private static final int STT_FUNC = 2;

  private CubinSymbols() {}

  /** The names of the FUNC symbols in {@code cubin}'s symbol table. */
  static List<String> functions(byte[] cubin) {
    ByteBuffer elf = ByteBuffer.wrap(cubin).order(ByteOrder.LITTLE_ENDIAN);
    long sectionHeaders = elf.getLong(0x28);
    int headerSize = elf.getShort(0x3a) & 0xffff;
    int sections = elf.getShort(0x3c) & 0xffff;
    List<String> names = new ArrayList<>();
    for (int i = 0; i < sections; i++) {
      int header = Math.toIntExact(sectionHeaders + (long) i * headerSize);
      if (elf.getInt(header + 4) != SHT_SYMTAB) {
        continue;
      }
      int symbols = Math.toIntExact(elf.getLong(header + 0x18));
      int size = Math.toIntExact(elf.getLong(header + 0x20));
      int entrySize = Math.toIntExact(elf.getLong(header + 0x38));
      int strings = Math.toIntExact(elf.getLong(Math.toIntExact(sectionHeaders
          + (long) elf.getInt(header + 0x28) * headerSize) + 0x18));
      for (int s = symbols; s < symbols + size; s += entrySize) {
        if ((elf.get(s + 4) & 0xf) == STT_FUNC) {
          names.add(string(cubin, strings + elf.getInt(s)));
        }
      }
    }
    return names;
  }

  private static String string(byte[] bytes, int start) {
    int end = start;
    while (bytes[end] != 0) {
      end++;
    }
    return new String(bytes, start, end - start, StandardCharsets.US_ASCII);
  }
}
