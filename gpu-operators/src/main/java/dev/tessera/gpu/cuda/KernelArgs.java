package dev.tessera.gpu.cuda;

import java.util.ArrayList;
import java.util.List;
import jcuda.NativePointerObject;
import jcuda.Pointer;

/** The parameter list of one kernel launch, in the kernel's parameter order. */
public final class KernelArgs {
  private final List<NativePointerObject> values = new ArrayList<>();

  /** A device address (a pointer parameter). */
  public KernelArgs address(long deviceAddress) {
    values.add(Pointer.to(new long[] {deviceAddress}));
    return this;
  }

  /** A 64-bit integer parameter. */
  public KernelArgs i64(long value) {
    values.add(Pointer.to(new long[] {value}));
    return this;
  }

  /** A 32-bit integer parameter. */
  public KernelArgs i32(int value) {
    values.add(Pointer.to(new int[] {value}));
    return this;
  }

  /** A parameter of 64-bit words passed by value (an array or struct parameter, 8-aligned). */
  public KernelArgs words(long[] words) {
    values.add(Pointer.to(words.clone()));
    return this;
  }

  /** A double parameter. */
  public KernelArgs f64(double value) {
    values.add(Pointer.to(new double[] {value}));
    return this;
  }

  Pointer toPointer() {
    return Pointer.to(values.toArray(new NativePointerObject[0]));
  }
}
