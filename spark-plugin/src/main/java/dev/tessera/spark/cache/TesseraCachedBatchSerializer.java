package dev.tessera.spark.cache;

import dev.tessera.gpu.codec.GpuForLayout;
import dev.tessera.gpu.column.ColumnType;
import dev.tessera.spark.TesseraConf;
import dev.tessera.spark.expr.SparkTypes;
import dev.tessera.spark.expr.Unsupported;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Optional;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.columnar.CachedBatch;
import org.apache.spark.sql.columnar.SimpleMetricsCachedBatchSerializer;
import org.apache.spark.sql.execution.columnar.DefaultCachedBatchSerializer;
import org.apache.spark.sql.execution.vectorized.OnHeapColumnVector;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.apache.spark.storage.StorageLevel;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.Option;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Tessera's cache format, installed by the driver plugin as Spark's
 * {@code spark.sql.cache.serializer}: each cached batch's columns are encoded with GPU-FOR,
 * GPU-DFOR, a dictionary or plain ({@link TesseraCachedBatch}), which GPU plans scan on the
 * device without decoding them on the host, and which CPU plans read as Spark column vectors
 * decoded here. Batch pruning works as with Spark's own serializer (the statistics are the same).
 *
 * <p>A table with a column type Tessera does not store (nested types, binary, decimals of more
 * than 18 digits, collated strings) is cached by Spark's default serializer, with a log line
 * saying which column. Input is always rows: a GPU plan being cached hands its rows over through
 * its transition to the host, as any CPU consumer would.
 */
public final class TesseraCachedBatchSerializer extends SimpleMetricsCachedBatchSerializer {
  private static final long serialVersionUID = 1L;
  private static final Logger LOG = LoggerFactory.getLogger(TesseraCachedBatchSerializer.class);

  private final DefaultCachedBatchSerializer fallback = new DefaultCachedBatchSerializer();

  /** The device types of {@code schema}, or empty (logged) when a type cannot be stored. */
  static Optional<List<ColumnType>> columnTypes(List<Attribute> schema, boolean log) {
    List<ColumnType> types = new ArrayList<>(schema.size());
    for (Attribute a : schema) {
      try {
        types.add(SparkTypes.columnType(a.dataType()));
      } catch (Unsupported e) {
        if (log) {
          LOG.info("Tessera: caching a table with Spark's default serializer: column {} has {}",
              a.name(), e.getMessage());
        }
        return Optional.empty();
      }
    }
    return Optional.of(types);
  }

  private static Optional<List<ColumnType>> columnTypes(StructType schema) {
    List<ColumnType> types = new ArrayList<>(schema.fields().length);
    for (StructField f : schema.fields()) {
      try {
        types.add(SparkTypes.columnType(f.dataType()));
      } catch (Unsupported e) {
        return Optional.empty();
      }
    }
    return Optional.of(types);
  }

  /** Rows per cached batch: the setting, rounded up to whole kernel tiles. */
  static int batchRows(SQLConf conf) {
    long set = TesseraConf.from(conf).get(TesseraConf.CACHE_BATCH_ROWS);
    long tiles = (set + GpuForLayout.SET_VALUES - 1) / GpuForLayout.SET_VALUES;
    return (int) Math.min(tiles * GpuForLayout.SET_VALUES,
        Integer.MAX_VALUE / GpuForLayout.SET_VALUES * GpuForLayout.SET_VALUES);
  }

  @Override
  public boolean supportsColumnarInput(Seq<Attribute> schema) {
    return false;
  }

  @Override
  public RDD<CachedBatch> convertInternalRowToCachedBatch(RDD<InternalRow> input,
      Seq<Attribute> schema, StorageLevel storageLevel, SQLConf conf) {
    Optional<List<ColumnType>> types = columnTypes(CollectionConverters.asJava(schema), true);
    if (types.isEmpty()) {
      return fallback.convertInternalRowToCachedBatch(input, schema, storageLevel, conf);
    }
    CachedBatchBuilder builder = new CachedBatchBuilder(types.get(), batchRows(conf), 0);
    return input.toJavaRDD().mapPartitions(builder::fromRows).rdd();
  }

  @Override
  public RDD<CachedBatch> convertColumnarBatchToCachedBatch(RDD<ColumnarBatch> input,
      Seq<Attribute> schema, StorageLevel storageLevel, SQLConf conf) {
    // Spark hands columnar input only to a serializer whose supportsColumnarInput says yes.
    throw new IllegalStateException("Tessera bug: columnar input reached"
        + " TesseraCachedBatchSerializer, whose supportsColumnarInput is false");
  }

  @Override
  public boolean supportsColumnarOutput(StructType schema) {
    return columnTypes(schema).isPresent();
  }

  @Override
  public Option<Seq<String>> vectorTypes(Seq<Attribute> attributes, SQLConf conf) {
    List<String> types = new ArrayList<>();
    for (int i = 0; i < attributes.size(); i++) {
      types.add(OnHeapColumnVector.class.getName());
    }
    return Option.apply(CollectionConverters.asScala(types).toList());
  }

  @Override
  public RDD<ColumnarBatch> convertCachedBatchToColumnarBatch(RDD<CachedBatch> input,
      Seq<Attribute> cacheAttributes, Seq<Attribute> selectedAttributes, SQLConf conf) {
    Selection selection = Selection.of(cacheAttributes, selectedAttributes);
    return input.toJavaRDD().flatMap(batch -> selection.read(batch)).rdd();
  }

  @Override
  public RDD<InternalRow> convertCachedBatchToInternalRow(RDD<CachedBatch> input,
      Seq<Attribute> cacheAttributes, Seq<Attribute> selectedAttributes, SQLConf conf) {
    if (columnTypes(CollectionConverters.asJava(cacheAttributes), false).isEmpty()) {
      return fallback.convertCachedBatchToInternalRow(input, cacheAttributes,
          selectedAttributes, conf);
    }
    Selection selection = Selection.of(cacheAttributes, selectedAttributes);
    return input.toJavaRDD().mapPartitions((Iterator<CachedBatch> batches) -> {
      UnsafeProjection toUnsafe = UnsafeProjection.create(selection.schema());
      return new RowsOfBatches(batches, selection, toUnsafe);
    }).rdd();
  }

  /** The rows of each cached batch in turn, a slice at a time, as UnsafeRows. */
  private static final class RowsOfBatches implements Iterator<InternalRow> {
    private final Iterator<CachedBatch> batches;
    private final Selection selection;
    private final UnsafeProjection toUnsafe;
    private Iterator<ColumnarBatch> slices = java.util.Collections.emptyIterator();
    private Iterator<InternalRow> rows = java.util.Collections.emptyIterator();

    RowsOfBatches(Iterator<CachedBatch> batches, Selection selection,
        UnsafeProjection toUnsafe) {
      this.batches = batches;
      this.selection = selection;
      this.toUnsafe = toUnsafe;
    }

    @Override
    public boolean hasNext() {
      while (!rows.hasNext() && (slices.hasNext() || batches.hasNext())) {
        if (slices.hasNext()) {
          rows = slices.next().rowIterator();
        } else {
          slices = selection.read(batches.next());
        }
      }
      return rows.hasNext();
    }

    @Override
    public InternalRow next() {
      if (!hasNext()) {
        throw new java.util.NoSuchElementException();
      }
      return toUnsafe.apply(rows.next());
    }
  }

  /** The selected columns: their ordinals in the cached schema and their Spark types. */
  record Selection(int[] ordinals, DataType[] types) implements java.io.Serializable {
    static Selection of(Seq<Attribute> cacheAttributes, Seq<Attribute> selectedAttributes) {
      List<Attribute> cached = CollectionConverters.asJava(cacheAttributes);
      List<Attribute> selected = CollectionConverters.asJava(selectedAttributes);
      int[] ordinals = new int[selected.size()];
      DataType[] types = new DataType[selected.size()];
      for (int i = 0; i < ordinals.length; i++) {
        Attribute a = selected.get(i);
        ordinals[i] = -1;
        for (int c = 0; c < cached.size(); c++) {
          if (cached.get(c).exprId().equals(a.exprId())) {
            ordinals[i] = c;
          }
        }
        if (ordinals[i] < 0) {
          throw new IllegalStateException("Tessera bug: " + a + " is not a cached column");
        }
        types[i] = a.dataType();
      }
      return new Selection(ordinals, types);
    }

    StructType schema() {
      StructField[] fields = new StructField[types.length];
      for (int i = 0; i < types.length; i++) {
        fields[i] = new StructField("c" + i, types[i], true,
            org.apache.spark.sql.types.Metadata.empty());
      }
      return new StructType(fields);
    }

    /** The selected columns of {@code batch}, slice by slice (CachedBatchReader). */
    Iterator<ColumnarBatch> read(CachedBatch batch) {
      return CachedBatchReader.read((TesseraCachedBatch) batch, ordinals, types);
    }
  }
}
