# manifold --preload for R (the parent of the preload protocol, see docs/manifold.md): load the
# packages and the app once, then fork one worker per "fork PORT" line read on stdin and answer
# "manifold-preload forked PORT PID" on stdout. EOF on stdin (manifold closed it or died) ends
# the parent; each fork ends itself when its parent is gone (its parent pid changes).
manifold_preload <- function(kind, path) {
  parent <- Sys.getpid()
  # httpuv's namespace is loaded by runApp/pr_run otherwise, in every fork; loading it starts
  # nothing (its I/O thread starts with the first server).
  loadNamespace("httpuv")
  # Before the fork: the runtime, the packages and the app code (all read-only afterwards, so
  # the forks share their pages copy-on-write). Nothing here may start a thread, a server or a
  # timer: httpuv's I/O thread and later's timer thread would not exist in a fork.
  if (kind == "plumber") {
    app <- plumber::pr(path)
    serve <- function(port) {
      plumber::pr_run(app, host = "127.0.0.1", port = port, docs = FALSE, quiet = TRUE)
    }
  } else {
    # shinyAppDir sources app.R (or ui.R/server.R and global.R) now, and caches it by mtime.
    app <- shiny::shinyAppDir(path)
    serve <- function(port) {
      shiny::runApp(app, host = "127.0.0.1", port = port, launch.browser = FALSE)
    }
  }
  ppid_of_self <- function() {
    stat <- readLines("/proc/self/stat", warn = FALSE)
    as.integer(strsplit(sub(".*\\) ", "", stat), " ")[[1]][2])
  }
  # A fork's lifeline: its parent dies with manifold (PR_SET_PDEATHSIG), and then the fork is
  # re-parented; it checks twice a second, on later's loop, which httpuv's loop runs.
  lifeline <- function() {
    if (ppid_of_self() != parent) {
      quit(save = "no", status = 1, runLast = FALSE)
    }
    later::later(lifeline, 0.5)
  }
  # A full collection now moves everything loaded into R's oldest generation: the forks' frequent
  # minor collections then leave those pages alone (they stay shared).
  gc(full = TRUE)
  input <- file("stdin")
  open(input)
  cat("manifold-preload ready\n")
  flush(stdout())
  repeat {
    line <- readLines(input, n = 1)
    if (length(line) == 0) {
      quit(save = "no", status = 0, runLast = FALSE)
    }
    port <- suppressWarnings(as.integer(sub("^fork ", "", line)))
    if (is.na(port)) {
      next
    }
    child <- parallel:::mcfork(estranged = TRUE)
    if (inherits(child, "masterProcess")) {
      # After the fork: close what was inherited (the parent's stdin and any connection the
      # app opened while loading), draw a fresh random seed (the parent's would repeat in every
      # fork), then start httpuv's server and event loop, and later's, in this process only.
      # (closeAllConnections() would also reset the sinks, and takes 0.3 s here.)
      for (con in getAllConnections()) {
        if (con > 2) close(getConnection(con))
      }
      if (exists(".Random.seed", envir = globalenv())) {
        rm(".Random.seed", envir = globalenv())
      }
      set.seed(NULL)
      Sys.setenv(PORT = port)
      lifeline()
      tryCatch(serve(port), error = function(e) message("worker: ", conditionMessage(e)))
      quit(save = "no", status = 1, runLast = FALSE)
    }
    cat(sprintf("manifold-preload forked %d %d\n", port, child$pid))
    flush(stdout())
  }
}
