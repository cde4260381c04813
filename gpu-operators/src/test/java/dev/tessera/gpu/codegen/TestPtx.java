package dev.tessera.gpu.codegen;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Hand-written PTX modules the codegen tests compile, the test resources, a count of what
 * generated PTX holds, and the check that a generated kernel compiles clean.
 */
final class TestPtx {
  private TestPtx() {}

  /**
   * Compiles {@code kernel} for {@code arch} with the in-jar compiler and checks what a launch
   * needs of it: no rejection (GeneratedModule.rejection: a stack frame or spills) and a 0-byte
   * stack. Returns the kernel's report, for the caller's own checks (registers, say).
   */
  static CompileReport assertCompilesClean(GeneratedKernel kernel, String arch) {
    CompileReport report = GeneratedModule.compile(kernel, arch).report(kernel.entry());
    assertNull(GeneratedModule.rejection(report), report.summary());
    assertEquals(0, report.stackFrameBytes(), report.summary());
    return report;
  }

  /** How many times {@code regex} matches in {@code ptx}. */
  static int hits(String ptx, String regex) {
    Matcher m = Pattern.compile(regex).matcher(ptx);
    int n = 0;
    while (m.find()) {
      n++;
    }
    return n;
  }

  /** out[i] = a[i] + b[i] over int64, one thread per row (nvcc's code, written at PTX 8.0). */
  static final String ADD_INT64 = """
      .version 8.0
      .target sm_90
      .address_size 64

      .visible .entry tessera_add_int64(
      	.param .u64 tessera_add_int64_a,
      	.param .u64 tessera_add_int64_b,
      	.param .u64 tessera_add_int64_out,
      	.param .u32 tessera_add_int64_rows
      )
      {
      	.reg .pred 	%p<2>;
      	.reg .b32 	%r<6>;
      	.reg .b64 	%rd<14>;

      	ld.param.u64 	%rd1, [tessera_add_int64_a];
      	ld.param.u64 	%rd2, [tessera_add_int64_b];
      	ld.param.u64 	%rd3, [tessera_add_int64_out];
      	ld.param.u32 	%r2, [tessera_add_int64_rows];
      	mov.u32 	%r3, %ctaid.x;
      	mov.u32 	%r4, %ntid.x;
      	mov.u32 	%r5, %tid.x;
      	mad.lo.s32 	%r1, %r3, %r4, %r5;
      	setp.ge.s32 	%p1, %r1, %r2;
      	@%p1 bra 	$L__done;

      	cvta.to.global.u64 	%rd4, %rd1;
      	mul.wide.s32 	%rd5, %r1, 8;
      	add.s64 	%rd6, %rd4, %rd5;
      	cvta.to.global.u64 	%rd7, %rd2;
      	add.s64 	%rd8, %rd7, %rd5;
      	ld.global.u64 	%rd9, [%rd8];
      	ld.global.u64 	%rd10, [%rd6];
      	add.s64 	%rd11, %rd9, %rd10;
      	cvta.to.global.u64 	%rd12, %rd3;
      	add.s64 	%rd13, %rd12, %rd5;
      	st.global.u64 	[%rd13], %rd11;

      $L__done:
      	ret;
      }
      """;

  /**
   * A per-thread local array written and read at run-time indices: ptxas cannot keep it in
   * registers, so the kernel needs a stack frame (256 bytes).
   */
  static final String LOCAL_ARRAY = """
      .version 8.0
      .target sm_90
      .address_size 64

      .visible .entry tessera_local_array(
      	.param .u64 tessera_local_array_in,
      	.param .u64 tessera_local_array_out
      )
      {
      	.local .align 4 .b8 	buf[256];
      	.reg .b32 	%r<8>;
      	.reg .b64 	%rd<10>;

      	ld.param.u64 	%rd1, [tessera_local_array_in];
      	ld.param.u64 	%rd2, [tessera_local_array_out];
      	cvta.to.global.u64 	%rd1, %rd1;
      	cvta.to.global.u64 	%rd2, %rd2;
      	mov.u32 	%r1, %tid.x;
      	mul.wide.u32 	%rd3, %r1, 4;
      	add.s64 	%rd4, %rd1, %rd3;
      	ld.global.u32 	%r2, [%rd4];
      	and.b32 	%r3, %r2, 63;
      	mul.wide.u32 	%rd5, %r3, 4;
      	mov.u64 	%rd6, buf;
      	add.s64 	%rd7, %rd6, %rd5;
      	st.local.u32 	[%rd7], %r1;
      	shr.u32 	%r4, %r2, 8;
      	and.b32 	%r5, %r4, 63;
      	mul.wide.u32 	%rd8, %r5, 4;
      	add.s64 	%rd9, %rd6, %rd8;
      	ld.local.u32 	%r6, [%rd9];
      	add.s64 	%rd4, %rd2, %rd3;
      	st.global.u32 	[%rd4], %r6;
      	ret;
      }
      """;

  /** Line 12 lacks its semicolon, so ptxas stumbles on line 13. */
  static final String SYNTAX_ERROR = """
      .version 8.0
      .target sm_90
      .address_size 64

      .visible .entry tessera_broken(
      	.param .u64 tessera_broken_out
      )
      {
      	.reg .b32 	%r<2>;
      	.reg .b64 	%rd<2>;
      	ld.param.u64 	%rd1, [tessera_broken_out];
      	mov.u32 	%r1, %tid.x
      	st.global.u32 	[%rd1], %r1;
      	ret;
      }
      """;

  /** A test resource of this package, as text. */
  static String resource(String name) {
    try (InputStream in = TestPtx.class.getResourceAsStream(name)) {
      if (in == null) {
        throw new IllegalStateException("no test resource " + name);
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
