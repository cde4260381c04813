package dev.tessera.it

import java.util.concurrent.ConcurrentLinkedQueue
import java.util.concurrent.atomic.AtomicInteger
import org.apache.logging.log4j.{Level, LogManager}
import org.apache.logging.log4j.core.{LogEvent, Logger}
import org.apache.logging.log4j.core.appender.AbstractAppender
import org.apache.logging.log4j.core.config.Property
import scala.jdk.CollectionConverters._

/** Collects what the logger `name` (and the loggers below it) logs until closed. */
final class LogCapture(name: String) extends AutoCloseable {
  private val events = new ConcurrentLinkedQueue[(Level, String)]()
  private val appender =
    new AbstractAppender(s"capture-${LogCapture.ids.incrementAndGet()}", null, null, true,
        Property.EMPTY_ARRAY) {
      override def append(event: LogEvent): Unit =
        events.add((event.getLevel, event.getMessage.getFormattedMessage))
    }
  private val logger = LogManager.getLogger(name).asInstanceOf[Logger]
  appender.start()
  logger.addAppender(appender)

  /** The messages logged at exactly `level`, in order. */
  def at(level: Level): Seq[String] =
    events.asScala.collect { case (l, message) if l == level => message }.toSeq

  override def close(): Unit = {
    logger.removeAppender(appender)
    appender.stop()
  }
}

object LogCapture {
  private val ids = new AtomicInteger()

  def apply[T](name: String)(body: LogCapture => T): T = {
    val capture = new LogCapture(name)
    try body(capture) finally capture.close()
  }
}
