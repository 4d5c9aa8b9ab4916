# A small Shiny app: the README's `manifold shiny ./app` and surge quick start use it, and
# recording.log beside this folder is one session of it recorded in Chromium with `surge record`.
library(shiny)

ui <- fluidPage(
  titlePanel("surge fixture"),
  numericInput("n", "Number", value = 10),
  selectInput("op", "Operation", choices = c("square", "cube"), selectize = FALSE),
  textOutput("result")
)

server <- function(input, output, session) {
  output$result <- renderText({
    req(input$n)
    v <- if (input$op == "square") input$n^2 else input$n^3
    paste0("Result: ", v)
  })
}

shinyApp(ui, server)
