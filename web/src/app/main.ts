document.getElementById("app")!.textContent = "CRAN whales";
