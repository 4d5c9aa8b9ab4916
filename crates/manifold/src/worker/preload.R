# manifold --preload for R (the parent of the preload protocol, see docs/manifold.md): load the
# packages and the app once, then fork one worker per "fork PORT DIR" line read on stdin and
# answer "manifold-preload forked PORT PID" on stdout (DIR: the worker's own directory). EOF on stdin (manifold closed it or died) ends
# the parent; each fork ends itself when its parent is gone (its parent pid changes).
manifold_preload <- function(kind, path) {
  parent <- Sys.getpid()
  # httpuv's namespace is loaded by runApp/pr_run otherwise, in every fork; loading it starts
  # nothing (its I/O thread starts with the first server).
  loadNamespace("httpuv")
  # A namespace's functions are lazy-loaded on first use: force them here for the serving stack
  # (0.2-0.6 s, once) so no fork reads and unpacks them again (in a fork that is CPU and pages
  # of its own; the first Shiny answer spent a third of its time in lazyLoadDBfetch).
  warm_namespaces <- function() {
    stack <- c(kind, "httpuv", "later", "promises", "htmltools")
    for (ns in intersect(stack, loadedNamespaces())) {
      env <- asNamespace(ns)
      for (name in ls(env, all.names = TRUE)) try(get(name, envir = env), silent = TRUE)
    }
  }
  # R allocates small objects (every non-vector node and vectors up to 128 bytes) into free
  # slots of its pages, and the loading left such slots scattered over the whole heap: a fork's
  # first allocations each wrote into a shared page and copied it (100,000 new cells, 5.6 MB,
  # copied 12 MB of the parent's pages). So the parent takes those slots itself, class by class
  # (vectors of 128, 64, 32, 16 and 8 bytes, then nodes), until a chunk needs new pages (the
  # resident size grows): a fork's allocations then fill fresh pages of its own. The filler is
  # kept, unused, as long as the process lives; its slots were resident already (it adds at most
  # one chunk per class, and is capped at 64 MB), and R's collections in a fork are unchanged.
  fill_free_slots <- function() {
    resident_kb <- function() {
      as.numeric(strsplit(readLines("/proc/self/statm", warn = FALSE), " ")[[1]][2]) * 4
    }
    # strsplit and as.pairlist build their objects in C: no garbage of the filled classes.
    vectors <- function(k) {
      words <- paste(rep("a", k), collapse = " ")
      function(n) strsplit(rep(words, n), " ", fixed = TRUE)
    }
    makers <- list(
      vectors(16), vectors(8), vectors(4), vectors(2), vectors(1),
      function(n) as.pairlist(vector("list", n))
    )
    bytes <- c(56 + 128, 56 + 64, 56 + 32, 56 + 16, 56 + 8, 56)
    n <- 4096
    keep <- list()
    total <- 0
    for (k in seq_along(makers)) {
      repeat {
        before <- resident_kb()
        keep[[length(keep) + 1]] <- makers[[k]](n)
        total <- total + n * bytes[k]
        if (resident_kb() - before > n * bytes[k] / 2048 || total > 64 * 2^20) break
      }
    }
    keep
  }
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
    # The page once, here: the first render's one-time work (dependencies resolved, templates
    # read, lazy objects loaded) is then done for every fork. A failure only costs that.
    req <- list2env(list(
      REQUEST_METHOD = "GET", PATH_INFO = "/", QUERY_STRING = "", SCRIPT_NAME = "",
      SERVER_NAME = "127.0.0.1", SERVER_PORT = "80", HTTP_HOST = "127.0.0.1",
      HEADERS = c(host = "127.0.0.1"), rook.url_scheme = "http"
    ))
    tryCatch(app$httpHandler(req), error = function(e) NULL)
    serve <- function(port) {
      shiny::runApp(app, host = "127.0.0.1", port = port, launch.browser = FALSE)
    }
  }
  ppid_of_self <- function() {
    stat <- readLines("/proc/self/stat", warn = FALSE)
    as.integer(strsplit(sub(".*\\) ", "", stat), " ")[[1]][2])
  }
  # A fork's lifeline: its parent dies with manifold (PR_SET_PDEATHSIG), and then the fork is
  # re-parented; it checks twice a second. plumber's loop (httpuv::service) waits for later's
  # timers; Shiny's does not: with any later timer pending, runApp's loop passes seconds where
  # it wants milliseconds (`max(1, min(1000, ms, later::next_op_secs()))`) and polls every
  # 1 ms, which kept an idle fork at 15% CPU and unshared its heap within seconds. So a Shiny
  # fork checks on Shiny's own timer.
  again <- if (kind == "shiny") {
    function(f) shiny:::scheduleTask(500, f)
  } else {
    function(f) later::later(f, 0.5)
  }
  lifeline <- function() {
    if (ppid_of_self() != parent) {
      quit(save = "no", status = 1, runLast = FALSE)
    }
    again(lifeline)
  }
  warm_namespaces()
  gc(full = TRUE)
  # Kept for the parent's (and every fork's) lifetime: see fill_free_slots.
  filler <- fill_free_slots()
  # Each collection moves its survivors one generation up and R has two old generations: two
  # full collections leave everything loaded (and the filler) in the oldest, so a fork's minor
  # collections (levels 0 and 1) neither move nor unmark the parent's objects.
  gc(full = TRUE)
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
    words <- regmatches(line, regexec("^fork ([0-9]+) ?(.*)$", line))[[1]]
    port <- suppressWarnings(as.integer(words[2]))
    dir <- words[3]
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
      # Its own directory: TMPDIR for what it starts (R's own tempdir() is fixed at R's start:
      # the parent's, under manifold's directory too), and the FIFO there that manifold logs as
      # this worker's output (R's output and messages; C code writing to fd 1/2 directly still
      # goes out through the parent's pipes).
      if (!is.na(dir) && nzchar(dir)) {
        Sys.setenv(TMPDIR = dir)
        out <- file.path(dir, "output")
        if (file.exists(out)) {
          out <- fifo(out, open = "w", blocking = TRUE)
          sink(out)
          sink(out, type = "message")
        }
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
