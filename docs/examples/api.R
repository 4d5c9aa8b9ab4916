# A small plumber API, the one the README's `manifold plumber api.R` serves.
# Each request runs on one R process; manifold runs several of them behind one address.

#* Sleep for ms milliseconds (a slow computation), then answer with this worker's pid.
#* @param ms:int
#* @get /sleep
function(ms = 200) {
  Sys.sleep(as.numeric(ms) / 1000)
  list(pid = Sys.getpid())
}

#* A tiny answer.
#* @serializer text
#* @get /hello
function() {
  "hello"
}
